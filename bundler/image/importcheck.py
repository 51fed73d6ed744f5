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
import re

from bundler.contracts.syslibs import bundle_line, missing_library
from bundler.errors import BuildError
from bundler.lock.sidecar import read_sidecar
from bundler.target.bundle import Bundle
from bundler.target.syspackages import package_for_library, package_for_message, package_for_program

NAME = "imports"
LIBRARIES = "shared libraries"  # the check whose finding lists what every shared object lacks (inimage/libraries.py)
BUDGET_S = float(os.environ.get("BUNDLER_IMPORT_BUDGET", "300"))


def import_argv(bundle: Bundle, python: str) -> tuple[str, ...] | None:
    """The check's command, or None when the lock has no sidecar naming the direct dependencies."""
    side = read_sidecar(bundle.lock_path)
    if side is None:
        return None
    direct = json.dumps(sorted(side.direct))
    argv = (python, "-m", "bdiag.imports", "--direct", direct, "--budget", str(int(BUDGET_S)), "--input", bundle.requirements)
    return argv + (("--gpu-target",) if bundle.target.backend in ("cuda", "rocm") else ())


_PROGRAM = re.compile(r"No such file or directory: '([\w.+-]+)'")


def failure(finding: dict, findings: dict | None = None, installed: tuple[str, ...] = ()) -> BuildError | None:
    """The error for an import check that failed with a report; None when it holds no failure.

    A missing shared library (or program) the table of system packages knows gets the
    Debian package that provides it, and the hint quotes the one bundle.toml line that
    installs it beside ``installed`` (the bundle's system packages), together with every other
    library the shared objects of that distribution lack (``findings``' shared-libraries check)."""
    failures = [dict(item) for item in finding.get("failures") or []]
    if not failures:
        return None
    site = ((findings or {}).get(LIBRARIES) or {}).get("site_unresolved") or {}
    asked = {id(item): system_package(str(item.get("error", ""))) for item in failures}
    lacking = [lib for item in failures if asked[id(item)][0] for lib in _lacking(site, item)]
    also = [package_for_library(lib) for lib in lacking]
    wanted = list(dict.fromkeys([package for package, _ in asked.values() if package] + [p for p in also if p]))
    wanted = [package for package in wanted if package not in installed]
    line = bundle_line(list(installed) + wanted)
    for item in failures:
        package, provided = asked[id(item)]
        if package in wanted:
            item["hint"] = (
                f"{item['distribution']} needs {provided}, which the Debian package {package} provides: "
                f"in bundle.toml's [build], {line}; then `bundler build`."
            )
    listed = "\n  ".join(f"{describe(item)}\n    Hint: {item['hint']}" for item in failures[:6])
    more = len(failures) - 6
    hint = "Follow the hint of each module above, then `bundler lock` and `bundler build`."
    if wanted:
        hint = f"Install the system libraries with one line in bundle.toml's [build]: {line}. " + hint
    return BuildError(
        f"direct dependencies do not import in the new image; the image was removed and nothing tagged:\n  {listed}"
        + (f"\n  … and {more} more" if more > 0 else ""),
        hint=hint,
        value=failures[0]["module"] or failures[0]["distribution"],
        result={"imports": finding, "system_packages": wanted},
    )


def _lacking(site: dict, item: dict) -> list[str]:
    """The libraries ldd could not find for the shared objects of a failing module's folder (and its ``<dist>.libs``)."""
    module = str(item.get("module") or "").split(".")[0]
    vendored = str(item.get("distribution", "")).replace("-", "_") + ".libs"
    return sorted({lib for path, libs in site.items() if path.split("/")[0] in (module, vendored) for lib in libs})


def system_package(error: str) -> tuple[str, str]:
    """The Debian package an import error asks for and what it provides ("the system library libGL.so.1"); ("", "") when none."""
    library = missing_library(error)
    if library and package_for_library(library):
        return package_for_library(library), f"the system library {library}"
    program = _PROGRAM.search(error)
    if program and package_for_program(program.group(1)):
        return package_for_program(program.group(1)), f"the program {program.group(1)}"
    package, words = package_for_message(error)
    return (package, f"{package} ({words!r})") if package else ("", "")


def describe(item: dict) -> str:
    what = f"{item['module']} ({item['distribution']} {item['version']})" if item["module"] else item["distribution"]
    return f"{what}: {item['error']}"


def notes(finding: dict) -> list[str]:
    """An import that could not be judged here (it needs the GPU's driver, or the time bound ran out)."""
    return [f"import {describe(item)} ({item['hint']})" for item in finding.get("warnings", [])]
