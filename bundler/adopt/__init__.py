"""`bundler init`: adopt an existing repository in place.

Readers of every way a project declares its dependencies (``reqfiles``, ``pyproject``,
``setuppy``, ``pipfile``, ``conda``), read statically and never executed; the choice
among them (``sources``); the Target the project states (``infer``); what the folder
holds (``survey``); the files written (``writer``); and the command from start to end
(``run``).
"""
