"""Each rule that several parts of bundler (and what it ships) must apply alike, in one place.

The ground floor: standard library only, importing nothing else of bundler, so that the
copies shipped inside ``diagnostics/`` and the generated project (``template/``) are these
very modules, written by ``python -m bundler.contracts.generate`` (``COPIES`` there says
which go where). docs/architecture.md ("Contracts") lists each contract and its copies.
"""
