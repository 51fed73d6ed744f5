"""The lock's lint: what makes a resolved lock unfit to write (or to build from)."""

from __future__ import annotations

import re
from pathlib import Path

from packaging.utils import canonicalize_name

from bundler.errors import LockError
from bundler.lock.lockfile import parse_pins, split_lock
from bundler.machinepaths import machine_paths
from bundler.target.table import LABELLED_COMPANIONS, PAIRED_COMPANIONS, is_paired_build

_FILE_URL = re.compile(r"\bfile:/", re.IGNORECASE)


def lint_lock(text: str, target, expected: dict[str, str], needs_setuptools: bool) -> list[str]:
    """Problems that make a lock unfit to write; [] when it is good.

    ``expected`` maps torch and each companion to its exact labelled version.
    """
    problems = []
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if _FILE_URL.search(stripped):
            problems.append(f"line {number} points at a local file URL ({stripped[:80]}): host-specific")
        elif stripped.startswith(("--find-links", "-f ", "--trusted-host", "-e ", "--editable")):
            problems.append(f"line {number} is a host-specific option ({stripped[:80]})")
        elif machine_paths(stripped):
            problems.append(f"line {number} names a machine-specific path ({stripped[:80]}): host-specific")
        elif stripped.startswith(("/", "./", "../")):
            problems.append(f"line {number} is a local path ({stripped[:80]}): host-specific")
    _, body = split_lock(text)
    pins = {pin.name: pin for pin in parse_pins(body)}
    for pin in pins.values():
        if not pin.version:
            problems.append(f"{pin.text[:80]!r} is not an exact name==version pin")
        elif not pin.hashes:
            problems.append(f"{pin.name}=={pin.version} has no --hash")
    for name, version in expected.items():
        locked = pins.get(canonicalize_name(name))
        if locked is None:
            if name == "torch":
                problems.append("torch is missing from the lock")
            continue
        if not (is_paired_build(locked.version, version) if name in PAIRED_COMPANIONS else locked.version == version):
            problems.append(f"{name}=={locked.version} is not the build of the Target ({name}=={version})")
    torch_pin = pins.get("torch")
    if torch_pin is not None:
        for name in LABELLED_COMPANIONS:
            companion = pins.get(name)
            if companion is not None and companion.label != torch_pin.label:
                problems.append(f"{name}=={companion.version} carries a different label than torch=={torch_pin.version}")
    if target.backend == "cuda" and target.platform == "linux_x86_64" and not any(n.startswith("nvidia-") for n in pins):
        problems.append("no nvidia-* package: a CUDA torch for Linux x86_64 needs its CUDA libraries (was it resolved on another OS?)")
    if target.backend == "rocm" and "pytorch-triton-rocm" not in pins:
        problems.append("pytorch-triton-rocm is missing: a ROCm torch depends on it")
    if needs_setuptools and "setuptools" not in pins:
        problems.append(
            f"setuptools is not pinned, but torch {target.torch} needs it on Python {target.python} (resolve with --allow-unsafe)"
        )
    return problems


def ensure_lintless(
    text: str, target, expected: dict[str, str], needs_setuptools: bool, lock_path: Path, input_name: str = "requirements.in"
) -> None:
    problems = lint_lock(text, target, expected, needs_setuptools)
    if problems:
        listed = "; ".join(problems[:6]) + (f"; and {len(problems) - 6} more" if len(problems) > 6 else "")
        raise LockError(
            f"the lock resolved for {target.describe()} fails its checks, so {lock_path} was not written: {listed}.",
            hint=f"Check {input_name} for a pin that overrides the Target's build, then run `bundler lock --upgrade`.",
            path=lock_path,
        )
