"""The import check, one of a new dependency image's checks: every direct dependency imports.

It runs the diagnostics' own ``bdiag/imports.py`` (the same code as the packages stage on
the rented box; stdlib only) with ``python -m bdiag.imports``, put into the check's
container beside ``bundler/inimage/`` (the dependency image has no diagnostics folder
yet), offline: each direct dependency's top-level modules imported in fresh interpreters
within a time bound. The direct dependencies are the lock's sidecar's
list. A failure names the module, the error and a hint; the build then removes the image
and tags nothing.
"""

from __future__ import annotations

import json
import os

from bundler.errors import BuildError
from bundler.lock.sidecar import read_sidecar
from bundler.target.bundle import Bundle

NAME = "imports"
BUDGET_S = float(os.environ.get("BUNDLER_IMPORT_BUDGET", "300"))


def import_argv(bundle: Bundle, python: str) -> tuple[str, ...] | None:
    """The check's command, or None when the lock has no sidecar naming the direct dependencies."""
    side = read_sidecar(bundle.lock_path)
    if side is None:
        return None
    direct = json.dumps(sorted(side.direct))
    argv = (python, "-m", "bdiag.imports", "--direct", direct, "--budget", str(int(BUDGET_S)), "--input", bundle.requirements)
    return argv + (("--gpu-target",) if bundle.target.backend in ("cuda", "rocm") else ())


def failure(finding: dict) -> BuildError | None:
    """The error for an import check that failed with a report; None when it holds no failure."""
    failures = finding.get("failures") or []
    if not failures:
        return None
    listed = "\n  ".join(f"{describe(item)}\n    Hint: {item['hint']}" for item in failures[:6])
    more = len(failures) - 6
    return BuildError(
        f"direct dependencies do not import in the new image; the image was removed and nothing tagged:\n  {listed}"
        + (f"\n  … and {more} more" if more > 0 else ""),
        hint="Follow the hint of each module above, then `bundler lock` and `bundler build`.",
        value=failures[0]["module"] or failures[0]["distribution"],
        result={"imports": finding},
    )


def describe(item: dict) -> str:
    what = f"{item['module']} ({item['distribution']} {item['version']})" if item["module"] else item["distribution"]
    return f"{what}: {item['error']}"


def notes(finding: dict) -> list[str]:
    """An import that could not be judged here (it needs the GPU's driver, or the time bound ran out)."""
    return [f"import {describe(item)} ({item['hint']})" for item in finding.get("warnings", [])]
