"""Programs bundler runs inside an image it builds (standard library only, Python 3.8 and up).

Each module is a program of its own, run as ``python -m bundler.inimage.<name>`` in a
container of a new dependency image (image/checks.py ships this folder into the container
before it starts; the image itself never holds it) and imported by the tests. Nothing here
imports the rest of bundler but the stdlib-only contracts shipped with it
(contracts/buildtag.py): the image has only its Python and the locked packages.
"""
