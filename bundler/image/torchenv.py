"""The build environment of a source archive whose build imports torch.

Such a package (PyG's ops, attention kernels, apex/detectron-style C++/CUDA ops) compiles
against the very torch it will run with, so it is built with build isolation off in a venv
that holds, first, the Target's own torch and what torch needs (the lock's wheels, taken from
the wheel cache and installed with ``--require-hashes``), then the build requirements the
package names (pyproject's ``[build-system] requires`` without torch, else setuptools and
wheel) and ninja, constrained to the lock's versions. On a CUDA or ROCm Target it builds on the devel
base (nvcc / hipcc), with the Target's architectures (``TORCH_CUDA_ARCH_LIST`` /
``PYTORCH_ROCM_ARCH`` from the compatibility table), ``CUDA_HOME`` / ``ROCM_HOME`` and
``MAX_JOBS`` bounded by this machine's CPUs and memory. The wheel is cached by the
archive's sha256 and the exact torch wheel (its sha256), besides the Target and base.
"""

from __future__ import annotations

import os
import re
import zipfile
from dataclasses import dataclass, field
from email.parser import Parser
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from bundler.lock.torchbuild import top_file, top_files
from bundler.lock.torchprobe import build_system_requires, pyproject_build_requires

JOB_MEMORY_GIB = 2.0  # what one compiler job of a torch extension takes, at most, in practice
DEFAULT_BUILD_REQUIRES = ("setuptools", "wheel")
_IMPORTS_TORCH = re.compile(r"^\s*(import torch\b|from torch(\.[\w.]+)? import\b)", re.MULTILINE)
_NINJA_OFF = re.compile(r"\buse_ninja\s*=\s*False\b")


@dataclass(frozen=True)
class TorchBuildPlan:
    """How one archive is built against torch: on which base, with which environment and build requirements."""

    base: str
    devel: bool
    torch: str  # the lock's pin, e.g. torch==2.13.0+cpu
    torch_sha256: str  # the Target's torch wheel
    environment: dict[str, str] = field(default_factory=dict)
    build_requires: tuple[str, ...] = ()
    parallel_extensions: int = 0  # setuptools' build_ext -j (0: its default, one extension after another)

    @property
    def cache_key(self) -> str:
        return f"against {self.torch} sha256:{self.torch_sha256} on {self.base}"


def imports_torch(sdist: Path) -> bool:
    """Whether the archive's build needs torch: its pyproject requires it to build, or its setup.py imports it."""
    for name, text in _build_files(sdist).items():
        if name.endswith("pyproject.toml"):
            if "torch" in {str(canonicalize_name(r)) for r in _names(pyproject_build_requires(text))}:
                return True
        elif _IMPORTS_TORCH.search(text):
            return True
    return False


def turns_ninja_off(sdist: Path) -> bool:
    """Whether its setup.py builds without ninja (``BuildExtension.with_options(use_ninja=False)``, as PyG's ops do):
    then torch compiles its files one at a time, whatever MAX_JOBS says."""
    return any(name.endswith("setup.py") and _NINJA_OFF.search(text) for name, text in _build_files(sdist).items())


def build_requires(sdist: Path) -> tuple[str, ...]:
    """The build requirements the archive names, torch left out (the Target's own is installed first), with what its
    setup.py imports undeclared; setuptools and wheel first when its pyproject names none."""
    declared = pyproject_build_requires(top_file(sdist, "pyproject.toml"))
    return (() if declared else DEFAULT_BUILD_REQUIRES) + build_system_requires(sdist)


def _names(lines: list[str]) -> list[str]:
    names = []
    for line in lines:
        try:
            names.append(Requirement(line).name)
        except InvalidRequirement:
            continue
    return names


def _build_files(sdist: Path) -> dict[str, str]:
    """The top-level setup.py and pyproject.toml of an archive, as text."""
    return top_files(sdist, ("setup.py", "pyproject.toml"))


def max_jobs(cpus: int | None = None, memory_bytes: int | None = None) -> int:
    """Parallel compiler jobs this machine can carry: its CPUs, and its memory at JOB_MEMORY_GIB a job."""
    cpus = cpus or os.cpu_count() or 1
    if memory_bytes is None:
        try:
            memory_bytes = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        except (ValueError, OSError, AttributeError):
            memory_bytes = 0
    by_memory = int(memory_bytes / (JOB_MEMORY_GIB * 2**30)) if memory_bytes else cpus
    return max(1, min(cpus, by_memory))


def cuda_arch_list(arch: tuple[str, ...]) -> str:
    """TORCH_CUDA_ARCH_LIST from the table's sm_XY / compute_XY: "8.0;9.0+PTX" (PTX for a compute_ entry)."""
    sass = sorted({a[3:] for a in arch if a.startswith("sm_")}, key=lambda v: int(v.rstrip("a")))
    ptx = {a[8:] for a in arch if a.startswith("compute_")}
    parts = [f"{v[:-1]}.{v[-1]}" for v in sass]
    for version in sorted(ptx, key=int):
        dotted = f"{version[:-1]}.{version[-1]}"
        parts = [p for p in parts if p != dotted] + [f"{dotted}+PTX"]
    return ";".join(parts)


def plan(
    target,
    runtime_base: str,
    torch_pin: str,
    torch_sha256: str,
    requires: tuple[str, ...],
    jobs: int | None = None,
    ninja_off: bool = False,
) -> TorchBuildPlan:
    """The build of one torch-compiling archive for ``target`` (the devel base on CUDA/ROCm, the runtime base on CPU).
    ``ninja_off``: its setup.py turns ninja off (turns_ninja_off)."""
    from bundler.target.table_file import load_table

    jobs = jobs or max_jobs()
    environment = {"MAX_JOBS": str(jobs)}
    if "ninja" not in {str(canonicalize_name(name)) for name in _names(list(requires))}:
        requires = (*requires, "ninja")  # torch's BuildExtension compiles in parallel (MAX_JOBS) only with ninja
    if target.backend == "cpu":
        # Without ninja, setuptools can still build several extensions at once (PyG's ops are one per file); only on a
        # CPU Target: torch swaps the one shared compiler between nvcc and c++ per file, which threads would interleave.
        parallel = jobs if ninja_off else 0
        return TorchBuildPlan(runtime_base, False, torch_pin, torch_sha256, environment | {"FORCE_CUDA": "0"}, requires, parallel)
    table = load_table()
    build = table.build_for(target)
    base = table.base_images(build, target.python)["devel"]
    if target.backend == "cuda":
        environment |= {"CUDA_HOME": "/usr/local/cuda", "FORCE_CUDA": "1"}
        if build.arch:
            environment["TORCH_CUDA_ARCH_LIST"] = cuda_arch_list(build.arch)
    else:
        environment |= {"ROCM_HOME": "/opt/rocm", "FORCE_ROCM": "1"}
        if build.arch:
            environment["PYTORCH_ROCM_ARCH"] = ";".join(build.arch)
    return TorchBuildPlan(base, True, torch_pin, torch_sha256, environment, requires)


def torch_closure(lock, target) -> list:
    """The lock's pins torch needs at build time: torch and, transitively, its Requires-Dist (markers for the Target)."""
    from bundler.image.wheelhouse import download, find_cached, rehash
    from bundler.lock.requirements import target_environment

    pins = {str(canonicalize_name(pin.name)): pin for pin in lock.pins}
    environment = target_environment(target) | {"extra": ""}
    todo, seen, wheels = ["torch"], set(), []
    while todo:
        batch = [pins[name] for name in dict.fromkeys(todo) if name in pins and name not in seen]
        seen |= {str(canonicalize_name(pin.name)) for pin in batch}
        download([pin for pin in batch if find_cached(pin) is None], lock.indexes, target)
        todo = []
        for pin in batch:
            cached = find_cached(pin)
            if cached is None:
                continue
            wheel = rehash(cached)
            wheels.append(wheel)
            todo += _requires(wheel.path, environment)
    return wheels


def _requires(wheel: Path, environment: dict[str, str]) -> list[str]:
    try:
        with zipfile.ZipFile(wheel) as archive:
            name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA") and n.count("/") == 1)
            message = Parser().parsestr(archive.read(name).decode("utf-8", "replace"))
    except (zipfile.BadZipFile, StopIteration, OSError):
        return []
    names = []
    for line in message.get_all("Requires-Dist") or []:
        try:
            requirement = Requirement(line)
        except InvalidRequirement:
            continue
        if requirement.marker is None or requirement.marker.evaluate(environment):
            names.append(str(canonicalize_name(requirement.name)))
    return names
