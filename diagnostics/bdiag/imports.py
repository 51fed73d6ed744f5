"""Import every direct dependency's top-level modules in fresh interpreters, within a time bound.

An installed package is not a working one: a wheel built for NumPy 1.x raises
``numpy.dtype size changed`` under NumPy 2, a missing optional dependency or system
library raises at import. This module finds the direct dependencies (the lock's sidecar,
``requirements-rebuild.json``: what requirements.in asks for on this Target), their
top-level modules (the installed metadata: ``top_level.txt``, else ``RECORD``), and
imports them one by one in a child interpreter, so that a crash or a hang names its
module and the rest still run. A failure carries the module, the error and a hint.

Used by the packages stage (``--lock``), and by ``bundler build`` as one of a new
dependency image's checks (``--direct``, the names given; this file and bdiag/__init__.py,
stdlib only, are put into the check's container and run with ``python -m bdiag.imports``):
``PYTHONPATH=<diagnostics> python -m bdiag.imports --lock FILE``
prints one JSON document (exit 0: every import passed; 1: a failure; 2: bad usage).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import select
import subprocess
import sys
import tempfile
import time
from functools import lru_cache
from pathlib import Path

from bdiag.contracts import dropped, syslibs

DEFAULT_BUDGET_S = 240.0
PER_MODULE_S = 120.0
NOT_MODULES = {"test", "tests", "testing", "doc", "docs", "example", "examples", "benchmark", "benchmarks"}
GPU_ERROR = re.compile(r"libcuda\.so|CUDA driver|NVIDIA driver|no CUDA-capable|libnvidia|libamdhip|libhsa-runtime|/dev/kfd", re.I)
_CHILD = r"""
import importlib, json, os, sys, time, traceback, warnings
out = os.fdopen(int(sys.argv[1]), "w", buffering=1)
for name in sys.argv[2:]:
    out.write(json.dumps({"module": name, "event": "start"}) + "\n")
    started = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            importlib.import_module(name)
        out.write(json.dumps({"module": name, "event": "ok", "seconds": time.perf_counter() - started}) + "\n")
    except BaseException as error:
        frames = traceback.extract_tb(error.__traceback__)
        where = "%s:%s" % (frames[-1].filename, frames[-1].lineno) if frames else ""
        causes, cause = [], error.__cause__ or error.__context__
        while cause is not None and len(causes) < 3:  # lazy importers (transformers) hide the real error in the chain
            causes.append("%s: %s" % (type(cause).__name__, cause))
            cause = cause.__cause__ or cause.__context__
        first = "%s: %s" % (type(error).__name__, error)
        root = [causes[-1]] if causes and causes[-1].split(": ", 1)[-1] not in first else []  # not when it repeats the error
        text = " (caused by ".join([first] + root) + ")" * bool(root)
        text = text[:1500]
        event = {"module": name, "event": "error", "error": text, "where": where, "seconds": time.perf_counter() - started}
        out.write(json.dumps(event) + "\n")
"""


def sidecar_of(lock_path: str) -> str:
    return os.path.splitext(lock_path)[0] + ".json"


def direct_names(lock_path: str) -> list | None:
    """The direct dependencies the lock's sidecar names; None when there is no sidecar."""
    path = sidecar_of(lock_path)
    if not os.path.isfile(path):
        return None
    with open(path, encoding="utf-8") as handle:
        data = json.load(handle)
    names = data.get("direct")
    if not isinstance(names, list) or not all(isinstance(name, str) for name in names):
        raise ValueError(f"{path} has no list of direct dependencies")
    return names


def top_level_modules(dist) -> list:
    """Importable top-level names of an installed distribution (metadata, not guesses).

    top_level.txt can name an extension that setup.py placed inside the package (pesq
    lists ``cypesq``, installed as ``pesq/cypesq….so``): a name counts only when RECORD
    installs it at the top."""
    text = dist.read_text("top_level.txt")
    names = [line.strip().split("/")[0] for line in text.splitlines()] if text else _from_record(dist)
    installed = {_top_name(item.parts) for item in dist.files} if dist.files else None
    seen = []
    for name in names:
        wanted = name and name.isidentifier() and not name.startswith("_") and name not in NOT_MODULES
        if wanted and name not in seen and (installed is None or name in installed):
            seen.append(name)
    return seen


def _top_name(parts: tuple) -> str:
    return parts[0].split(".")[0] if len(parts) == 1 else parts[0]


def _from_record(dist) -> list:
    names = []
    for item in dist.files or ():
        parts = item.parts
        if not parts or parts[0] in ("..", "__pycache__") or parts[0].endswith((".dist-info", ".data", ".pth")):
            continue
        if len(parts) == 1:
            base, _, suffix = parts[0].partition(".")
            if suffix == "py" or suffix.endswith(("so", "pyd")):
                names.append(base)
        elif parts[-1].endswith((".py", ".so")):
            names.append(parts[0])
    return sorted(set(names), key=names.index)


def own_module(dist: str, modules: list) -> str:
    """The module named after the distribution (pybullet's ``pybullet`` beside ``pybullet_envs``, ``eglRenderer``); "" when
    none is: then every top-level module is the package (opencv-python's ``cv2``)."""
    wanted = re.sub(r"[-_.]+", "_", dist).lower()
    return next((module for module in modules if module.lower() == wanted), "")


def plan(names: list) -> tuple[list, list]:
    """([(distribution, version, [modules])], [names not installed]) for the direct dependencies."""
    from importlib import metadata

    found, missing = [], []
    for name in names:
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            missing.append(name)
            continue
        found.append((name, dist.version, top_level_modules(dist)))
    return found, missing


# the diagnostics folder this file is in, which the children must not see ("" when run with ``python -c``)
DIAGNOSTICS = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) if "__file__" in globals() else ""


def run_imports(python: str, modules: list, budget_s: float = DEFAULT_BUDGET_S, per_module_s: float = PER_MODULE_S) -> dict:
    """module -> {"status": ok|error|timeout|crash|unchecked, "error", "seconds"}; children restart after a crash or hang."""
    results: dict = {}
    pending = list(modules)
    deadline = time.monotonic() + budget_s
    env = dict(os.environ)
    paths = [path for path in env.get("PYTHONPATH", "").split(os.pathsep) if path and os.path.abspath(path) != DIAGNOSTICS]
    env["PYTHONPATH"] = os.pathsep.join(paths)  # the children see the environment, not the diagnostics
    with tempfile.TemporaryDirectory(prefix="bdiag-imports-") as work:
        while pending:
            if time.monotonic() >= deadline:
                for name in pending:
                    results[name] = {"status": "unchecked", "error": f"not imported: the {budget_s:.0f} s bound was reached", "seconds": 0}
                break
            _one_child(python, pending, results, deadline, per_module_s, env, work)
    return results


def _one_child(python, pending, results, deadline, per_module_s, env, work) -> None:
    log_path = os.path.join(work, "child.log")
    read_fd, write_fd = os.pipe()
    with open(log_path, "wb") as log:
        child = subprocess.Popen(
            [python, "-c", _CHILD, str(write_fd), *pending],
            pass_fds=(write_fd,),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            cwd=work,
            env=env,
        )
    os.close(write_fd)
    current, started, buffer, timed_out = None, time.monotonic(), b"", False
    with os.fdopen(read_fd, "rb") as pipe:
        while True:
            limit = deadline if current is None else min(deadline, started + per_module_s)
            ready, _, _ = select.select([pipe], [], [], max(0.0, limit - time.monotonic()))
            if not ready:
                timed_out = True
                child.kill()
                break
            chunk = os.read(pipe.fileno(), 65536)
            if not chunk:
                break
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                event = json.loads(line)
                if event["event"] == "start":
                    current, started = event["module"], time.monotonic()
                    continue
                results[event["module"]] = {"status": "ok" if event["event"] == "ok" else "error", **event}
                pending.remove(event["module"])
                current = None
    code = child.wait()
    tail = _tail(log_path)
    name = current or (pending[0] if pending else None)
    if name is None:
        return
    if timed_out:
        bound = per_module_s if current else deadline - started
        results[name] = {"status": "timeout", "error": f"the import did not finish within {bound:.0f} s", "seconds": bound}
    else:
        signal = f"signal {-code}" if code < 0 else f"exit code {code}"
        results[name] = {"status": "crash", "error": f"the interpreter died during the import ({signal}): {tail}", "seconds": 0}
    pending.remove(name)


def _tail(path: str) -> str:
    with open(path, "rb") as handle:
        lines = [line for line in handle.read().decode("utf-8", "replace").splitlines() if line.strip()]
    return " | ".join(lines[-3:])[-500:]


def _module_gone(module: str) -> str:
    """For ``a.b`` whose package ``a`` is installed: "<a's distribution> <version>" (the installed release lacks the
    submodule, as torch 2 lacks torch._six); "" when it is not such a case."""
    import importlib.util
    from importlib import metadata

    top = module.split(".")[0]
    if "." not in module or importlib.util.find_spec(top) is None:
        return ""
    owners: dict[str, list[str]] = getattr(metadata, "packages_distributions", dict)()  # 3.10+
    name = (owners.get(top) or [top])[0]
    try:
        return f"{name} {metadata.version(name)}"
    except metadata.PackageNotFoundError:
        return ""


# A C++ symbol of torch's own namespaces (c10::, at::, torch::) that the library asks for and the loaded torch lacks.
_TORCH_SYMBOL = re.compile(r"undefined symbol: _Z\w*?(?:3c10|2at|5torch)\d")


def hint_for(error: str, dist: str, version: str, input_name: str = "requirements.in") -> str:
    """What to do about one failed import (``input_name``: the lock's input, bundle.toml [build] requirements)."""
    from importlib import metadata

    if re.search(
        r"numpy\.dtype size changed|numpy\.core\.multiarray failed|compiled using NumPy 1\.x|_ARRAY_API not|in the NumPy 2\.0", error
    ):
        try:
            numpy = metadata.version("numpy")
        except metadata.PackageNotFoundError:
            numpy = "?"
        return (
            f"{dist} {version} was made for NumPy 1.x and this environment has numpy {numpy}: pin `numpy<2` in {input_name}, "
            f"or require a newer release of {dist} built for NumPy 2; then `bundler lock` and `bundler build`."
        )
    newer = re.search(r"(\S+) requires NumPy ([\d.]+) or newer, found ([\d.]+)", error)
    if newer:
        return (
            f"{newer.group(1)}, which {dist} imports, is a release made for NumPy {newer.group(2)}+ while numpy {newer.group(3)} is "
            f"pinned: pin an older {newer.group(1)} made for NumPy 1.x in {input_name} (or lift the numpy pin); then `bundler lock`."
        )
    missing = re.search(r"No module named '([^']+)'", error)
    dropped_by = dropped.dropped_from(missing.group(1)) if missing else None
    if missing and dropped_by:
        shipper, release, note = dropped_by
        return (
            f"{dist} {version} imports {missing.group(1)}, which {shipper} dropped in release {release}: pin "
            f"`{dropped.pin_that_ships(missing.group(1))}` in {input_name} ({note}), or require a newer release of {dist}; "
            "then `bundler lock`."
        )
    gone = _module_gone(missing.group(1)) if missing else ""
    if missing and gone:
        return (
            f"{dist} {version} imports {missing.group(1)}, a module {gone} no longer has (no package to add): {dist} {version} "
            f"was made for an older {gone.split()[0]}. Pin a release of {dist} made for {gone} in {input_name}, or an older "
            f"{gone.split()[0]}; then `bundler lock`."
        )
    if missing:
        return (
            f"{dist} imports {missing.group(1)}, which is not installed: add the package that provides it to {input_name} "
            f"(often an optional extra, `{dist}[…]`), then `bundler lock`."
        )
    soname = syslibs.missing_library(error)
    package = syslibs.package_for_library(system_libraries(), soname) if soname else ""
    if package:
        return (
            f"{dist} needs the system library {soname}, which the Debian package {package} provides and this image lacks: "
            f"in bundle.toml's [build], {syslibs.bundle_line([package])} (beside any packages already listed there); then "
            f"`bundler build` and ship the new image."
        )
    library = re.search(r"(lib[\w.+-]+\.so[\w.]*): cannot open shared object file|(\w[\w ]*?) library not found", error)
    if library:
        return (
            f"{dist} needs the system library {library.group(1) or library.group(2)}, which this image's base lacks: choose a base "
            f"image that has it (bundle.toml [target] base_image), drop {dist} if the project does not need it here, or use a "
            f"release of {dist} whose wheel bundles the library."
        )
    if _TORCH_SYMBOL.search(error):
        try:
            torch = f"torch {metadata.version('torch')}"
        except metadata.PackageNotFoundError:
            torch = "this torch"
        return (
            f"{dist} {version}'s compiled library was built against another torch than the {torch} installed here: it asks for "
            f"a torch symbol this torch does not have. Pin a release of {dist} built for {torch} in {input_name} (one that "
            f"publishes only a source archive is built by bundler against the Target's torch), or choose the torch {dist} "
            f"{version} was built for; then `bundler lock` and `bundler build`."
        )
    if re.search(r"cannot import name|has no attribute", error):
        return (
            f"{dist} {version} expects another version of a package it imports: pin the release {dist} was made with in "
            f"{input_name} (or a newer {dist}), then `bundler lock --upgrade`."
        )
    return f"Importing it fails in a fresh interpreter: try the release of {dist} the project was tested with, or a newer one."


@lru_cache(maxsize=1)
def system_libraries() -> dict:
    """The table of which Debian package provides a shared library (a copy bundler generates); empty when unreadable."""
    try:
        return json.loads((Path(__file__).parent / "contracts" / "system-libraries.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {section: {} for section in syslibs.SECTIONS}


def check(lock_path: str, python: str, budget_s: float = DEFAULT_BUDGET_S, gpu_target: bool = False) -> dict:
    """Import the direct dependencies of the lock at ``lock_path``; a report with failures and hints."""
    names = direct_names(lock_path)
    if names is None:
        return {"skipped": f"no {os.path.basename(sidecar_of(lock_path))} beside the lock (run `bundler lock`)", "failures": []}
    return check_names(names, python, budget_s, gpu_target)


def check_names(
    names: list, python: str, budget_s: float = DEFAULT_BUDGET_S, gpu_target: bool = False, input_name: str = "requirements.in"
) -> dict:
    """Import the distributions ``names``' top-level modules; a report with failures and hints.

    On a GPU Target without a visible GPU (a build host), an import that needs the GPU's
    driver is a warning: the rented box's diagnostics check it again there."""
    started = time.monotonic()
    found, missing = plan(names)
    modules = {module: (dist, version) for dist, version, mods in found for module in mods}
    outcome = run_imports(python, list(modules), budget_s)
    no_gpu_here = gpu_target and not any(os.path.exists(path) for path in ("/dev/nvidia0", "/dev/kfd"))
    failures, warnings = [], []
    for module, result in outcome.items():
        dist, version = modules[module]
        if result["status"] == "ok":
            continue
        item = {"module": module, "distribution": dist, "version": version, "status": result["status"], "error": result["error"]}
        if result["status"] == "unchecked" or (no_gpu_here and GPU_ERROR.search(result["error"])):
            item["hint"] = "It needs a GPU (checked on the rented box)" if result["status"] != "unchecked" else "Raise the time bound."
            warnings.append(item)
            continue
        own = own_module(dist, [m for m, (d, _) in modules.items() if d == dist])
        if own and own != module and outcome.get(own, {}).get("status") == "ok":
            item["hint"] = f"{dist}'s own module {own} imports; {module} is another module its wheel installs (an example or plugin)"
            warnings.append(item)
            continue
        item["hint"] = hint_for(result["error"], dist, version, input_name)
        failures.append(item)
    for name in missing:
        hint = "Install exactly the lock (`bundler build`, or `pip install --require-hashes --no-deps -r` the lock)."
        failures.append({"module": "", "distribution": name, "version": "", "status": "missing", "error": "not installed", "hint": hint})
    return {
        "distributions": len(found),
        "modules": len(modules),
        "imported": sum(1 for result in outcome.values() if result["status"] == "ok"),
        "failures": failures,
        "warnings": warnings,
        "slowest": sorted(((round(r.get("seconds", 0), 2), m) for m, r in outcome.items()), reverse=True)[:3],
        "seconds": round(time.monotonic() - started, 2),
    }


def describe(item: dict) -> str:
    what = f"{item['module']} ({item['distribution']} {item['version']})" if item["module"] else item["distribution"]
    return f"{what}: {item['error']}"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bdiag.imports", description="Import the direct dependencies of a bundle's lock.")
    given = parser.add_mutually_exclusive_group(required=True)
    given.add_argument("--lock", help="the lock (its sidecar .json names the direct dependencies)")
    given.add_argument("--direct", type=json.loads, help="the direct dependencies' names as a JSON list")
    parser.add_argument("--budget", type=float, default=DEFAULT_BUDGET_S, help="seconds for all imports together")
    parser.add_argument("--gpu-target", action="store_true", help="the bundle's Target is a GPU backend")
    parser.add_argument("--input", default="requirements.in", help="the lock's input file, named in the hints")
    args = parser.parse_args(argv)
    try:
        if args.lock:
            report = check(args.lock, sys.executable, args.budget, args.gpu_target)
        else:
            report = check_names(args.direct, sys.executable, args.budget, args.gpu_target, args.input)
    except (OSError, ValueError) as error:
        sys.stderr.write(f"bdiag.imports: {error}\n")
        return 2
    sys.stdout.write(json.dumps(report, sort_keys=True) + "\n")
    return 1 if report["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
