"""Stage 2: installed distributions against the bundle's lock, then `pip check`."""

from __future__ import annotations

import os

from bdiag import imports
from bdiag.lockfile import LockCorrupt, marker_applies, read_lock, same_version

NAME = "packages"
NEEDS_TORCH = False
SHOWN = 8  # how many drifted packages the message names


def run(checkup, result) -> None:
    probe = checkup.probe
    installed = probe.installed_distributions()
    result.values["installed"] = len(installed)
    if checkup.bundle is None or checkup.bundle.error:
        result.warn("no usable bundle.toml, so no lock to compare with", "Run from the project (or pass --project) after `bundler lock`.")
    elif not os.path.isfile(checkup.bundle.lock_path):
        result.values["lock"] = checkup.bundle.lock_path
        result.warn(f"no lock at {checkup.bundle.lock_path}", "Create it with `bundler lock`, then rebuild the image.")
    else:
        _compare(result, checkup.bundle.lock_path, installed)
    if result.status == "fail":
        return
    _pip_check(result, probe)
    if result.status != "fail" and checkup.bundle is not None and not checkup.bundle.error and os.path.isfile(checkup.bundle.lock_path):
        _imports(result, checkup, probe)


def _compare(result, path: str, installed: dict) -> None:
    result.values["lock"] = path
    try:
        lock = read_lock(path)
    except LockCorrupt as error:
        result.fail(f"the lock is corrupt: {error}", "Regenerate it with `bundler lock` (or restore it from version control).")
        return
    except OSError as error:
        result.fail(f"the lock {path} cannot be read: {error.strerror}", "Check its permissions, or regenerate it with `bundler lock`.")
        return
    missing: list[str] = []
    other: list[str] = []
    unsure: list[str] = []
    checked = 0
    for name, pin in sorted(lock.pins.items()):
        applies = marker_applies(pin.marker)
        if applies is False:  # e.g. a win32-only pin on Linux
            continue
        checked += 1
        have = installed.get(name)
        problem = None
        if have is None:
            problem = ("missing", f"{name} (locked {pin.version or 'by URL'})")
        elif pin.version and not same_version(have, pin.version):
            problem = ("other", f"{name} {have} (locked {pin.version}{_source_clash(lock, have, pin.version)})")
        if problem:
            (unsure if applies is None else (missing if problem[0] == "missing" else other)).append(problem[1])
    result.values.update(
        torch_index=lock.torch_index,
        locked=checked,
        not_for_this_platform=len(lock.pins) - checked,
        missing=missing,
        other_version=other,
        index_urls=lock.index_urls,
    )
    result.summary = f"{checked} locked, {len(missing)} missing, {len(other)} other version"
    if missing or other:
        named = (missing + other)[:SHOWN]
        result.fail(
            f"the environment differs from the lock: {', '.join(named)}" + (" …" if len(missing + other) > SHOWN else ""),
            f"Reinstall exactly the lock: `python -m pip install --require-hashes --no-deps -r {os.path.basename(path)}` (or rebuild the "
            "image with `bundler build`).",
        )
    if unsure:
        result.values["unsure_marker"] = unsure
        result.warn(f"could not evaluate the environment markers of: {', '.join(unsure[:SHOWN])}", None)


def _source_clash(lock, have: str, pinned: str) -> str:
    """Why a same-release torch differs: PyPI's wheels are unlabelled, PyTorch's index labels them (+cu128)."""
    if have.split("+")[0] != pinned.split("+")[0] or ("+" in have) == ("+" in pinned):
        return ""
    if lock.torch_index == "pypi":
        return " from PyPI; the installed one is PyTorch's index build"
    return " from PyTorch's index; the installed one is PyPI's unlabelled build"


def _pip_check(result, probe) -> None:
    present, code, output = probe.pip_check()
    if not present:
        result.values["pip_check"] = "pip absent"
        result.warn(
            "pip is not installed here, so `pip check` did not run", "Install pip in the environment to check declared dependencies."
        )
        return
    result.values["pip_check"] = "ok" if code == 0 else output.splitlines()[:SHOWN]
    if code != 0:
        result.fail(
            f"`pip check` found broken requirements: {'; '.join(output.splitlines()[:3])}",
            "Install the versions the lock names; a package installed on top of the lock usually causes this.",
        )
    elif not result.summary:
        result.summary = "pip check ok"


def _imports(result, checkup, probe) -> None:
    """Every direct dependency's top-level modules imported in fresh interpreters (bdiag/imports.py)."""
    budget = float(checkup.bundle.diagnostics.get("import_budget_s", imports.DEFAULT_BUDGET_S))
    report = imports.check(checkup.bundle.lock_path, probe.executable(), budget, gpu_target=checkup.gpu)
    result.values["imports"] = report
    if "skipped" in report:
        result.note(f"imports not checked: {report['skipped']}")
        return
    for item in report["warnings"]:
        result.warn(f"import {imports.describe(item)}", item["hint"])
    if report["failures"]:
        shown = report["failures"][:3]
        result.fail(
            "direct dependencies do not import: " + "; ".join(imports.describe(item) for item in shown),
            " ".join(dict.fromkeys(item["hint"] for item in shown)),
        )
    result.summary = (result.summary + "; " if result.summary else "") + f"{report['imported']}/{report['modules']} modules import"
