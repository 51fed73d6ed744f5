"""Version strings of a Target, and the names of PyTorch's builds (cu128, rocm6.4, cpu).

One place for these shapes: bundle.toml and the compatibility table check them alike.
"""

from __future__ import annotations

import re

from bundler.contracts.buildtag import build_tag

# ASCII digits only (re.ASCII): "１２.８" is not a version, and would name no index
RELEASE_RE = re.compile(r"^\d+\.\d+\.\d+$", re.ASCII)  # torch 2.9.1
MINOR_RE = re.compile(r"^\d+\.\d+$", re.ASCII)  # CUDA 12.8
ACCELERATOR_RE = re.compile(r"^\d+\.\d+(\.\d+)?$", re.ASCII)  # CUDA 12.8, ROCm 6.2.4
PYTHON_RE = re.compile(r"^3\.\d{1,2}$", re.ASCII)


def version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


def cuda_tag(version: str) -> str:
    return build_tag("cuda", version)


def rocm_tag(version: str) -> str:
    return build_tag("rocm", version)


def build_name(backend: str, accelerator: str) -> str:
    """cu128, rocm6.4 or cpu: the name of a PyTorch build (its index and its wheels' label); one rule in contracts/buildtag.py."""
    return build_tag(backend, accelerator)


# The newest manylinux glibc a Target's wheels may need: the oldest glibc among the bases
# bundler builds on (Ubuntu 22.04's 2.35). Resolving for another platform uses it.
MANYLINUX_GLIBC = 35
DOCKER_ARCH = {"linux_x86_64": "amd64", "linux_aarch64": "arm64"}  # a Target platform as an image's Architecture


def platform_tags(platform: str) -> list[str]:
    """The wheel platform tags a Target's platform accepts, newest manylinux first (linux_x86_64 -> manylinux_2_35_x86_64 …)."""
    arch = platform.split("_", 1)[1]
    tags = [f"manylinux_2_{minor}_{arch}" for minor in range(MANYLINUX_GLIBC, 16, -1)] + [f"manylinux2014_{arch}"]
    if arch == "x86_64":
        tags += [f"manylinux2010_{arch}", f"manylinux1_{arch}"]
    return tags + [platform]
