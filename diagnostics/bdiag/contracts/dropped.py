# Generated from bundler/contracts/dropped.py by `python -m bundler.contracts.generate`: do not edit.
"""Modules that a later release of the distribution shipping them dropped, while older code still imports them.

One table for every reader: the lock's refusal of a source archive whose setup imports such a
module, `bundler init`'s list of what the environment provides, and the diagnostics' hint for an
import that fails on one. Standard library only (a copy ships in diagnostics/).
"""

from __future__ import annotations

import re

# module: (the distribution that shipped it, its first release without it, what to know when pinning below it)
DROPPED = {
    "pkg_resources": ("setuptools", "82", "torch needs setuptools>=77, so 77-81 fits"),
    "numpy.distutils": ("numpy", "2", "NumPy 1.26 is the last with it, for Python 3.11 at most; torch runs with NumPy 1.x"),
}


def dropped_from(module: str) -> tuple[str, str, str] | None:
    """(distribution, first release without it, a note) for ``module`` or a submodule of it; None when no release dropped it."""
    parts = module.split(".")
    return next((DROPPED[key] for key in (".".join(parts[:n]) for n in range(len(parts), 0, -1)) if key in DROPPED), None)


def pin_that_ships(module: str) -> str:
    """The requirement that still ships ``module`` (``setuptools<82``), or "" when no release dropped it."""
    found = dropped_from(module)
    return f"{found[0]}<{found[1]}" if found else ""


_MISSING_MODULE = re.compile(r"No module named '([\w.]+)'")


def build_constraint_for(output: str) -> str:
    """The pin that ships a module a failed build's isolated environment lacked (``setuptools<82`` for a setup that
    imports pkg_resources): a build constraint that lets that build run; "" when the output names no such module."""
    for module in reversed(_MISSING_MODULE.findall(output)):
        pin = pin_that_ships(module)
        if pin:
            return pin
    return ""
