"""A source archive's metadata prepared with the Target's torch installed, at lock time.

An archive whose build imports torch (torchbuild.py) cannot be prepared by pip in an isolated
environment. Where its dependencies are declared only when it is built, and wherever the
Target is a CPU one, bundler prepares its metadata as its build will run: in a container of
the Target's base image, in a venv holding the Target's torch, with build isolation off
(``pip install --dry-run --no-deps --no-build-isolation --report``). That gives the
dependencies a dynamic setup.py computes, and it runs the part of setup.py that decides what
to compile: a CUDA-only kernel (flash-attn, mamba-ssm, causal-conv1d) stops there on a CPU
base with its own words about nvcc or CUDA_HOME, so the lock refuses it in seconds instead
of the build refusing it after torch was installed in a builder. Where the bundle declares
``[build] system_packages`` and the archive compiles, the probe runs in the builder image its
wheel build will use (engine/builderimage.py), so a setup that looks for a library's headers
(MinkowskiEngine's BLAS) finds what the bundle installs.

The venv is made once per base image, torch pin and indexes, in the cache folder the lock
containers mount (the torch wheel's sha256 is kept beside it); what a probe found is kept by
the archive's sha256 and that venv, so a second lock starts no container.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import re
import shlex
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from bundler.contracts.dropped import build_constraint_for
from bundler.engine.builderimage import archive_packages, builder_image
from bundler.errors import ExternalError, LockError
from bundler.lock.torchbuild import NEEDS_GPU_COMPILER, member_names, own_lines, per_torch_index, top_file

if TYPE_CHECKING:
    from bundler.engine import BaseImage, Engine

PROBE_TIMEOUT_S = int(os.environ.get("BUNDLER_METADATA_PROBE_TIMEOUT", "900"))  # the first one installs torch
Say = Callable[[str], None]
_DEFAULTS = {"setuptools", "wheel"}
# a setup.py that can leave its CUDA kernels out (a C++ extension, a CPU-only switch): its CUDA sources alone say nothing
# about why it failed on a CPU Target (MinkowskiEngine's CPU_ONLY, PyG's WITH_CUDA, detectron2's FORCE_CUDA)
CPU_ROUTE = re.compile(
    r"\bCppExtension\s*\(|\b\w+\s*=\s*CppExtension\b|\bCPU_ONLY\b|--cpu_only|\bWITH_CUDA\b|\bFORCE_CUDA\b", re.IGNORECASE
)


@dataclass
class ProbeSite:
    """Where probes run: the engine, the Target's base image, and what a lock container mounts and sets."""

    engine: Engine
    image: str
    image_id: str
    python: str
    torch_pin: str  # torch==2.13.0+cpu
    index_args: list[str]
    volumes: dict[str, dict[str, str]]  # host path -> {"bind": ..., "mode": ...}, /cache and /tools among them
    environment: dict[str, str]
    cache: Path  # host folder mounted at /cache
    say: Say = field(default=lambda text: None)
    base: BaseImage | None = None  # the Target's base image, where a builder image is made from it
    system_packages: tuple[str, ...] = ()  # the bundle's [build] system_packages

    @property
    def venv_key(self) -> str:
        text = "\0".join([self.image_id, self.python, self.torch_pin, *self.index_args])
        return hashlib.sha256(text.encode()).hexdigest()[:16]


def probe_script(site: ProbeSite, sdist: str, build_requires: tuple[str, ...], environment: dict[str, str]) -> str:
    """The container's script: the torch venv (made once), the archive's own build requirements, then pip's metadata step."""
    venv = f"/cache/torchprobe-{site.venv_key}"
    index = shlex.join(site.index_args)
    extra = [line for line in build_requires if _name(line) not in _DEFAULTS]  # the venv has setuptools and wheel
    exports = " ".join(f"{key}={shlex.quote(value)}" for key, value in sorted(environment.items()))
    prepare = f"{venv}/bin/python -m pip install --dry-run --no-deps --no-build-isolation --ignore-installed --no-index"
    archive = shlex.quote("/probe/" + sdist)
    return "\n".join(
        [
            "set -e",
            f"PY=$(command -v python{site.python} || true)",
            f'if [ -z "$PY" ]; then echo "bundler: the image has no python{site.python} on PATH" >&2; exit 42; fi',
            f'if [ ! -f {venv}/.ready ]; then rm -rf {venv}; "$PY" -m venv {venv}; '
            f"{venv}/bin/python -m pip install -q --no-index --find-links /tools 'pip>=25.3'; "
            f"{venv}/bin/python -m pip install -q --no-compile {index} --report {venv}/torch-report.json "
            f"{shlex.quote(site.torch_pin)} setuptools wheel packaging ninja; touch {venv}/.ready; fi",
            *(
                [f"{venv}/bin/python -m pip install -q --no-compile --target /tmp/build-requires {index} {shlex.join(extra)}"]
                + ["export PYTHONPATH=/tmp/build-requires"]
                if extra
                else []
            ),
            f"export PATH={venv}/bin:$PATH VIRTUAL_ENV={venv}",  # a setup that runs `pip`, `python` or ninja finds the venv's
            f"echo \"bundler: preparing metadata with torch $({venv}/bin/python -c 'import torch; print(torch.__version__)')\"",
            f"export {exports}" if exports else "true",
            f"{prepare} --report /probe/report.json {archive}",
        ]
    )


def prepared_requirements(site: ProbeSite, sdist: Path, sha256: str, name: str, version: str, target) -> list[str]:
    """The archive's Requires-Dist as its own setup declares it with the Target's torch present; LockError when it refuses."""
    packages = archive_packages(member_names(sdist), site.system_packages) if site.system_packages else []
    key = ":".join([sha256, site.venv_key, *packages])
    known = _known().get(key)
    if isinstance(known, list):
        return known
    if packages and site.base is not None:  # it compiles against what the bundle installs: probe where its wheel builds
        site = replace(site, image_id=builder_image(site.engine, site.base, f"python{site.python}", packages, site.say))
    requires = _run(site, sdist, name, version, target)
    _remember(key, requires)
    return requires


def _run(site: ProbeSite, sdist: Path, name: str, version: str, target) -> list[str]:
    environment = {"FORCE_CUDA": "0", "MAX_JOBS": "1"} if target.backend == "cpu" else {}
    ready = (site.cache / f"torchprobe-{site.venv_key}" / ".ready").is_file()
    site.say(
        f"Preparing {name}=={version}'s metadata with {site.torch_pin} installed (its build imports torch)"
        + ("" if ready else "; installing that torch in a probe venv first, once for this base image")
        + "…"
    )
    with tempfile.TemporaryDirectory(prefix="bundler-probe-") as work:
        folder = Path(work)
        (folder / sdist.name).write_bytes(sdist.read_bytes())
        os.chmod(folder, 0o777)
        requires = build_system_requires(sdist)
        ran = _probe_once(site, folder, sdist.name, requires, environment, name)
        constraint = build_constraint_for(ran.output) if ran.exit_code != 0 else ""
        if constraint:  # its setup imports a module newer releases dropped (numpy.distutils): once more with one that ships it
            site.say(f"{name}=={version}'s setup imports a module only `{constraint}` still ships: preparing it again with that…")
            ran = _probe_once(site, folder, sdist.name, (*requires, constraint), environment, name)
        report = folder / "report.json"
        if ran.exit_code == 0 and report.is_file():
            return _requires_from_report(report)
        raise refusal(name, version, target, site, ran.output, ran.exit_code, sdist)


def _probe_once(site: ProbeSite, folder: Path, sdist: str, requires: tuple[str, ...], environment: dict[str, str], name: str):
    """One run of the probe's container over ``folder`` (mounted at /probe): the engine's result."""
    from bundler.engine import EngineFailure, Mount, RunSpec

    mounts = [Mount(source, bind["bind"], bind["mode"] == "ro") for source, bind in site.volumes.items()]
    spec = RunSpec(
        site.image_id,
        ["/bin/sh", "-c", probe_script(site, sdist, requires, environment)],
        mounts=[*mounts, Mount(str(folder), "/probe", read_only=False)],
        environment=site.environment,
        working_dir="/tmp",
        user=f"{os.getuid()}:{os.getgid()}",
        network_mode="bridge",
    )
    try:
        return site.engine.run(spec, timeout=PROBE_TIMEOUT_S)
    except EngineFailure as error:
        raise ExternalError(
            f"the container preparing {name}'s metadata with the Target's torch could not run: {error.explanation[:300]}.",
            hint="Check the engine's log and its free disk space, then lock again.",
            value=name,
        ) from None


def _requires_from_report(report: Path) -> list[str]:
    data = json.loads(report.read_text(encoding="utf-8"))
    (item,) = data.get("install") or [{}]
    return [str(line) for line in (item.get("metadata") or {}).get("requires_dist") or []]


def cuda_sources(sdist: Path | None) -> str:
    """A clause naming what in the archive builds CUDA code only: its .cu/.cuh sources, or a CUDAExtension in its setup.py
    (some archives ship no kernels, only the setup that fetches or builds them); "" when neither, or when its setup.py
    has a CPU route."""
    if sdist is None:
        return ""
    setup = top_file(sdist, "setup.py")
    if CPU_ROUTE.search(setup):
        return ""
    count = sum(1 for name in member_names(sdist) if name.lower().endswith((".cu", ".cuh")))
    if count:
        return f" (its archive holds {count} CUDA sources, .cu/.cuh)"
    return " (its setup.py declares a CUDAExtension)" if "CUDAExtension" in setup else ""


def refusal(name: str, version: str, target, site: ProbeSite, log: str, code: int, sdist: Path | None = None) -> Exception:
    """Why the archive's own setup refused, in its words, and the route."""
    pin = f"{name}=={version}"
    lines = own_lines(log)
    if "bundler: preparing metadata" not in log:  # the torch venv itself could not be made
        return ExternalError(
            f"the probe venv with {site.torch_pin} could not be made in {site.image} (exit {code}):\n  {lines}",
            hint="It installs the Target's torch from the lock's indexes inside the base image: check that the image reaches them "
            "(BUNDLER_INDEX_MAP, the proxy, PIP_CERT), then lock again.",
            value=site.image,
        )
    page = per_torch_index(name, target)
    wheels = f" {name} publishes wheels for each torch build on {page}." if page else ""
    cuda = cuda_sources(sdist)
    if (cuda or NEEDS_GPU_COMPILER.search(log)) and target.backend == "cpu":
        return LockError(
            f"{pin} cannot be built for {target.describe()}: it compiles CUDA/ROCm code{cuda}, whose build needs nvcc or hipcc "
            f"and a GPU build of torch, and a CPU Target has neither. Its setup, run with {site.torch_pin} installed, stops "
            f"with:\n  {lines}",
            hint=f"Lock for a CUDA or ROCm Target (`bundler lock --cuda VER`), whose build of {name} runs on the devel base; or keep "
            f"{name} out of the CPU lock (a requirements file of the GPU Target alone); or pin a release of {name} that publishes "
            f"a wheel for the Target.{wheels} The previous lock was not touched.",
            value=name,
        )
    return LockError(
        f"{pin}'s metadata could not be prepared even with {site.torch_pin} installed and build isolation off "
        f"(exit {code}). Its setup said:\n  {lines}",
        hint=f"Its build needs more than torch (a build requirement it does not declare, a system library, another torch): pin a "
        f"release of {name} that publishes a wheel for the Target, or build the wheel where it builds (`pip wheel "
        f"--no-build-isolation --no-deps {pin} -w wheels/`) and list `./wheels/<the file>.whl` in requirements.in.{wheels} "
        "The previous lock was not touched.",
        value=name,
    )


def build_system_requires(sdist: Path) -> tuple[str, ...]:
    """The archive's pyproject ``[build-system] requires`` without torch (the probe venv has the Target's own), and what its
    setup.py imports at the top without declaring it (MinkowskiEngine's ``import numpy``)."""
    declared = [line for line in pyproject_build_requires(top_file(sdist, "pyproject.toml")) if _name(line) not in ("torch", "")]
    named = {_name(line) for line in declared}
    return tuple(declared + [name for name in setup_imports(sdist) if _name(name) not in named])


# modules a setup.py imports whose distribution has another name
_DISTRIBUTION_OF = {"Cython": "cython", "yaml": "pyyaml", "skbuild": "scikit-build", "pkgconfig": "pkgconfig", "git": "gitpython"}
# what every build environment here has, or what ships with the archive's build tools
_PROVIDED = {"torch", "setuptools", "distutils", "pkg_resources", "wheel", "packaging", "ninja", "pip", "_distutils_hack"}


def setup_imports(sdist: Path) -> list[str]:
    """The distributions a setup.py imports as it runs (at its top, or in a branch there: not in a function, a class or a
    ``try``) that neither the standard library, the build environment nor the archive itself provides: a build requirement
    it needs but does not declare, which an isolated build lacks and so does a venv holding only torch."""
    text = top_file(sdist, "setup.py")
    try:
        tree = ast.parse(text) if text else None
    except SyntaxError:
        return []
    if tree is None:
        return []
    own = {name.split("/")[1].split(".")[0] for name in member_names(sdist) if name.count("/") >= 1 and name.split("/")[1]}
    found: list[str] = []
    for node in _run_statements(tree.body):
        modules = [a.name for a in node.names] if isinstance(node, ast.Import) else []
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules = [node.module]
        for module in modules:
            top = module.split(".")[0]
            if top in sys.stdlib_module_names or top in _PROVIDED or top in own:
                continue
            name = _DISTRIBUTION_OF.get(top, top)
            if name not in found:
                found.append(name)
    return found


def pyproject_build_requires(text: str) -> list[str]:
    """A pyproject.toml's ``[build-system] requires`` ([] when it names none or does not parse)."""
    from bundler.tomlcompat import loads as toml_loads

    try:
        requires = toml_loads(text).get("build-system", {}).get("requires", [])
    except ValueError:
        return []
    return [str(item) for item in requires] if isinstance(requires, list) else []


def _run_statements(body: list) -> list:
    """The statements of ``body`` that run as the module runs, into its if/else, with and for blocks (MinkowskiEngine's
    ``else: import numpy.distutils.system_info``), not into a function, a class or a try (an optional import)."""
    found = []
    for node in body:
        found.append(node)
        if isinstance(node, (ast.If, ast.For, ast.While, ast.With)):
            found += _run_statements(node.body + getattr(node, "orelse", []))
    return found


def _name(line: str) -> str:
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name

    try:
        return str(canonicalize_name(Requirement(line).name))
    except InvalidRequirement:
        return ""


# ----- what probes found, kept by archive hash and probe venv -------------------------------------
def _known_path() -> Path:
    from bundler.pipsettings import cache_dir

    return cache_dir() / "torch-probes.json"


def _known() -> dict:
    try:
        data = json.loads(_known_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _remember(key: str, requires: list[str]) -> None:
    from bundler.fsutil import atomic_write_text

    known = _known() | {key: requires}
    path = _known_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(known, indent=1, sort_keys=True) + "\n")
