"""What a build proves before anything is tagged, in two parts.

**Dependency checks** run once, in a container of a new dependency image (no network,
no GPU needed): a list of ``Check``s, each a command whose last JSON line is its
finding. Their verdict is recorded on the dependency image as a label and not run again
while that image is reused. Today's list: torch's build against the Target, and the
shared libraries (every ``.so`` under torch/lib and nvidia/*/lib resolves with ``ldd``;
for a real CUDA build libcudart, libcublas and libcudnn load through ctypes without a
driver), and every direct dependency's import (importcheck.py). More checks append to the
list ``dependency_checks`` returns.

**Project checks** run on every build, without starting a container: the image's user
and entry point, the project's lock against the pins the dependency image was made
from, and files read from a created (never started) container: the entry point is
executable, the diagnostics are there, every config file parses.
"""

from __future__ import annotations

import io
import json
import tarfile
from collections.abc import Callable
from dataclasses import dataclass, field

from bundler.errors import BuildError
from bundler.image import importcheck, layout
from bundler.image.labels import PINS_LABEL
from bundler.lock.installcheck import torch_build_check

CHECK_TIMEOUT_S = 900
# Provided by the GPU driver on the rented machine, never by a wheel: ldd may not find them here.
DRIVER_LIBRARIES = ("libcuda.so", "libnvidia-", "libnvcuvid.so")
# A multi-node fabric's own stack (RDMA verbs, MPI, PMIx, OpenSHMEM, libfabric, UCX): only the
# transport plugins of cuFile and NVSHMEM link them, and are loaded only where that fabric is
# set up. A library missing only these is reported under "fabric_only", not failed.
FABRIC_LIBRARIES = (
    "libibverbs.so",
    "librdmacm.so",
    "libmlx5.so",
    "libmpi.so",
    "libpmix.so",
    "liboshmem.so",
    "libfabric.so",
    "libucs.so",
    "libucp.so",
)
CUDA_LOADS = ("libcudart", "libcublas", "libcudnn")
CLOCK_KEYS = ("seconds", "slowest")  # timings in a finding, left out of the recorded verdict


@dataclass(frozen=True)
class Check:
    name: str
    argv: tuple[str, ...]  # run in the image; the last stdout line starting with "{" is the finding
    # the check's own error for a finding that failed (None: the generic one), and its notes for the user
    failure: Callable[[dict], BuildError | None] | None = field(default=None, compare=False)
    notes: Callable[[dict], list[str]] | None = field(default=None, compare=False)

    def as_dict(self) -> dict:
        return {"name": self.name, "argv": list(self.argv)}


def libraries_check(backend: str) -> str:
    """Python run in the image: ldd every shared library of torch and the nvidia wheels (a library
    missing only a fabric's stack is listed apart); for a real CUDA build (torch/lib/libtorch_cuda.so
    present) load libcudart, libcublas and libcudnn."""
    loads = list(CUDA_LOADS) if backend == "cuda" else []
    return (
        "import ctypes, glob, json, os, subprocess, sys, sysconfig\n"
        "site = sysconfig.get_paths()['purelib']\n"
        f"driver = {list(DRIVER_LIBRARIES)!r}\n"
        f"fabric = {list(FABRIC_LIBRARIES)!r}\n"
        "folders = [os.path.join(site, 'torch', 'lib')] + sorted(glob.glob(os.path.join(site, 'nvidia', '*', 'lib')))\n"
        "libraries = sorted(p for f in folders for p in glob.glob(os.path.join(f, '*.so*')) if os.path.isfile(p))\n"
        "missing, fabric_only = {}, {}\n"
        "for path in libraries:\n"
        "    out = subprocess.run(['ldd', path], capture_output=True, text=True).stdout\n"
        "    lost = [l.split()[0] for l in out.splitlines() if 'not found' in l and not any(d in l for d in driver)]\n"
        "    if lost:\n"
        "        name = os.path.relpath(path, site)\n"
        "        (fabric_only if all(any(f in l for f in fabric) for l in lost) else missing)[name] = lost\n"
        "real = os.path.exists(os.path.join(site, 'torch', 'lib', 'libtorch_cuda.so'))\n"
        f"asked = {loads!r}\n"
        "wanted = asked if real else []\n"
        "loaded, failed = [], {}\n"
        "for stem in wanted:\n"
        "    found = sorted(p for p in libraries if os.path.basename(p).startswith(stem + '.so'))\n"
        "    try:\n"
        "        ctypes.CDLL(found[0])\n"
        "        loaded.append(os.path.basename(found[0]))\n"
        "    except (IndexError, OSError) as error:\n"
        "        failed[stem] = str(error) if found else 'not installed'\n"
        "finding = {'libraries': len(libraries), 'unresolved': missing, 'fabric_only': fabric_only, 'loaded': loaded,\n"
        "           'load_failures': failed}\n"
        "if asked and not real:\n"
        "    finding['note'] = 'torch/lib holds no libtorch_cuda.so (a stand-in torch): nothing to load'\n"
        "print(json.dumps(finding, sort_keys=True))\n"
        "sys.exit(1 if missing or failed else 0)\n"
    )


def dependency_checks(bundle) -> list[Check]:
    """The checks of a new dependency image, in order (what the Target needs of the installed packages)."""
    target, python = bundle.target, layout.PYTHON
    checks = [
        Check("torch build", (python, "-c", torch_build_check(target))),
        Check("shared libraries", (python, "-c", libraries_check(target.backend))),
    ]
    imports = importcheck.import_argv(bundle, python)
    if imports:
        checks.append(Check(importcheck.NAME, imports, failure=importcheck.failure, notes=importcheck.notes))
    return checks


RUNNER = (  # the checks run side by side (a CUDA image's ldd pass and torch's import each take seconds)
    "import json, subprocess, sys\n"
    "checks = json.loads(sys.argv[1])\n"
    "running = [subprocess.Popen(c['argv'], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for c in checks]\n"
    "results = []\n"
    "for check, process in zip(checks, running):\n"
    "    out, err = process.communicate()\n"
    "    lines = [l for l in out.splitlines() if l.startswith('{')]\n"
    "    try:\n"
    "        finding = json.loads(lines[-1]) if lines else {}\n"
    "    except ValueError:\n"
    "        finding = {}\n"
    "    result = {'name': check['name'], 'ok': process.returncode == 0, 'finding': finding}\n"
    "    if process.returncode:\n"
    "        result['output'] = (out + err).strip()[-1500:]\n"
    "    results.append(result)\n"
    "print(json.dumps(results, sort_keys=True))\n"
    "sys.exit(0 if all(r['ok'] for r in results) else 1)\n"
)


def run_dependency_checks(engine, image_id: str, checks: list[Check], python: str = layout.PYTHON) -> list[dict]:
    """Run ``checks`` in one container of ``image_id`` (no network); BuildError naming the first that failed."""
    import docker.errors

    argv = ["-c", RUNNER, json.dumps([check.as_dict() for check in checks])]
    try:
        container = engine.containers.create(image_id, argv, entrypoint=[python], network_mode="none")
        try:
            container.start()
            code = int(container.wait(timeout=CHECK_TIMEOUT_S).get("StatusCode", 1))
            output = container.logs(stderr=True).decode("utf-8", errors="replace")
        finally:
            container.remove(force=True)
    except docker.errors.APIError as error:
        raise BuildError(
            f"the engine could not run the dependency checks in {image_id[:19]}: {(error.explanation or str(error))[:400]}.",
            hint="Check the engine's log (`journalctl -u docker`) and its free disk space, then build again.",
            value=image_id,
        ) from None
    lines = [line for line in output.splitlines() if line.startswith("[")]
    try:
        results = json.loads(lines[-1]) if lines else []
    except ValueError:
        results = []
    failed = [result for result in results if not result["ok"]]
    if code != 0 or not results or failed:
        first = failed[0] if failed else {"name": "the checks' runner", "output": output.strip()[-1500:]}
        own = next((check.failure for check in checks if check.name == first["name"] and check.failure), None)
        failure = own(first.get("finding") or {}) if own else None
        raise failure or BuildError(
            f"the dependency image failed its check {first['name']!r}: "
            + json.dumps(first.get("finding") or {}, sort_keys=True)[:600]
            + ("\nOutput:\n  " + "\n  ".join(str(first.get("output", "")).splitlines()[-12:]) if first.get("output") else ""),
            hint="The wheels installed but do not work together in the base image: check the lock was made for this Target "
            "(`bundler lock`) and that the base image has the Target's Python and a glibc new enough for the wheels.",
            value=first["name"],
        )
    for result in results:  # the verdict becomes a label: the same image must give the same one
        result["finding"] = {key: value for key, value in result["finding"].items() if key not in CLOCK_KEYS}
    return results


def check_notes(checks: list[Check], results: list[dict]) -> list[str]:
    """What the checks that passed have to tell the user (an import that needs the rented GPU …)."""
    notes = {check.name: check.notes for check in checks if check.notes}
    return [note for result in results if result["name"] in notes for note in notes[result["name"]](result["finding"])]


# ----- project checks: no container is started ---------------------------------------------
def _read_tree(container, path: str) -> dict[str, tuple[int, bytes]]:
    """{relative name: (mode, bytes)} of the regular files at ``path`` in a created container."""
    stream, _ = container.get_archive(path)
    files = {}
    with tarfile.open(fileobj=io.BytesIO(b"".join(stream))) as tar:
        for member in tar:
            if member.isreg() and (handle := tar.extractfile(member)) is not None:
                files[member.name.split("/", 1)[1] if "/" in member.name else member.name] = (member.mode, handle.read())
    return files


def parse_error(name: str, data: bytes) -> str:
    """Why a config file does not parse ("" when it does, or when bundler has no parser for its kind)."""
    from bundler.tomlcompat import tomllib

    try:
        text = data.decode("utf-8")
        if name.endswith(".json"):
            json.loads(text)
        elif name.endswith(".toml"):
            tomllib.loads(text)
        elif name.endswith((".yaml", ".yml")):
            return _yaml_error(text)
    except ValueError as error:  # JSON, TOML and UTF-8 errors are all ValueErrors
        return f"{type(error).__name__}: {str(error).splitlines()[0][:200] if str(error) else ''}"
    return ""


def _yaml_error(text: str) -> str:
    import yaml

    try:
        yaml.safe_load(text)
    except yaml.YAMLError as error:
        return f"{type(error).__name__}: {' '.join(str(error).split())[:200]}"
    return ""


def project_checks(engine, image_id: str, pins_sha256: str) -> dict:
    """The cheap checks of the project layers; BuildError naming what is wrong."""
    image = engine.images.get(image_id)
    config = image.attrs.get("Config") or {}
    problems = []
    if config.get("User") != f"{layout.UID}:{layout.UID}":
        problems.append(f"the image runs as {config.get('User')!r}, not {layout.UID}:{layout.UID}")
    if config.get("Entrypoint") != [layout.ENTRYPOINT]:
        problems.append(f"the entry point is {config.get('Entrypoint')!r}, not {layout.ENTRYPOINT}")
    made_from = (image.labels or {}).get(PINS_LABEL)
    if made_from != pins_sha256:
        problems.append(f"the dependency image was made from pins {made_from!r}, the lock's are {pins_sha256}")
    container = engine.containers.create(image_id, ["true"], network_mode="none")
    try:
        entry = _read_tree(container, layout.ENTRYPOINT)
        run_py = _read_tree(container, f"{layout.DIAGNOSTICS}/run.py")
        config_files = _read_tree(container, f"{layout.PROJECT}/config")
    finally:
        container.remove(force=True)
    if not any(mode & 0o111 for mode, _ in entry.values()):
        problems.append(f"{layout.ENTRYPOINT} is not executable")
    if not run_py:
        problems.append(f"{layout.DIAGNOSTICS}/run.py is missing")
    for name, (_, data) in sorted(config_files.items()):
        error = parse_error(name, data)
        if error:
            problems.append(f"config/{name} does not parse ({error})")
    if problems:
        raise BuildError(
            "the new image failed its project checks: " + "; ".join(problems) + ".",
            hint="Fix the file named above and build again; nothing was tagged.",
            value=problems[0],
        )
    return {"ok": True, "config_files": sorted(config_files), "entry_point": layout.ENTRYPOINT}
