# Generated from bundler/contracts/runid.py by `python -m bundler.contracts.generate`: do not edit.
"""A run ID: the name of one folder of runs/ and nothing else.

Letters, digits, ``.``, ``_`` and ``-``, starting with a letter or digit, at most 80
characters (so ``..``, a slash or a hidden name never passes). The pilot makes them as UTC
time then a random suffix; `bundler runs` takes them from the user.

Standard library only: copied into the generated project (generated, see ``generate.py``).
"""

from __future__ import annotations

import re

RUN_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,79}", re.ASCII)


def is_run_id(text: str) -> bool:
    return RUN_ID_RE.fullmatch(text) is not None
