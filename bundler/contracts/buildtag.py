"""PyPI/PyTorch build names and the check that an installed torch is the Target's build.

- The **build tag** names a PyTorch build, its index and its wheels' local label:
  ``cu128`` (CUDA 12.8: the first two parts, dots dropped), ``rocm6.4`` (ROCm as given),
  ``cpu``.
- The **torch-build rule**: torch's release equals the Target's (``2.6`` == ``2.6.0``,
  the local label aside); a CUDA or ROCm build was made for the Target's accelerator when
  their first two parts agree (``torch.version.hip`` ``6.4.43482`` is ROCm 6.4; CUDA
  ``12.8`` is not ``12.80``); a CPU Target has neither.

Standard library only: copied into diagnostics/ (generated, see ``generate.py``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

BACKENDS = ("cuda", "rocm", "cpu")
NAMES = {"cuda": "CUDA", "rocm": "ROCm", "cpu": "CPU"}


def version_tuple(text: str | None) -> tuple[int, ...]:
    """The numbers of a version string: '12.8' -> (12, 8), '6.4.43482-abc' -> (6, 4, 43482)."""
    return tuple(int(part) for part in re.findall(r"[0-9]+", text or "", re.ASCII))


def build_tag(backend: str, accelerator: str) -> str:
    """cu128, rocm6.4 or cpu; ValueError for a GPU backend without its version."""
    if backend == "cpu":
        return "cpu"
    if backend not in BACKENDS:
        raise ValueError(f"backend {backend!r} is none of {', '.join(BACKENDS)}")
    if not version_tuple(accelerator):
        raise ValueError(f"a {backend} build needs its version, got {accelerator!r}")
    if backend == "cuda":
        return "cu" + "".join(str(part) for part in version_tuple(accelerator)[:2])
    return "rocm" + accelerator


def build_kind(cuda: str | None, hip: str | None) -> str:
    """What an installed torch was built for, from torch.version.cuda and torch.version.hip."""
    return "rocm" if hip else "cuda" if cuda else "cpu"


def same_release(installed: str, wanted: str) -> bool:
    """torch's release against the Target's, the local label (+cu128) aside; trailing zeros do not count."""

    def release(text: str) -> tuple[int, ...]:
        numbers = list(version_tuple(text.split("+")[0]))
        while len(numbers) > 1 and numbers[-1] == 0:
            numbers.pop()
        return tuple(numbers)

    return bool(version_tuple(installed)) and release(installed) == release(wanted)


def accelerator_matches(built: str | None, accelerator: str) -> bool:
    """A CUDA/HIP version torch was built with against the Target's: the first two parts agree."""
    return bool(built) and version_tuple(built)[:2] == version_tuple(accelerator)[:2]


@dataclass(frozen=True)
class TorchBuild:
    version: str  # torch.__version__
    cuda: str | None  # torch.version.cuda
    hip: str | None  # torch.version.hip


def torch_build_problems(got: TorchBuild, torch: str, backend: str, accelerator: str) -> list[str]:
    """Why the installed torch is not the Target's build ([] when it is)."""
    problems = []
    if not same_release(got.version, torch):
        problems.append(f"torch {got.version} is not {torch}")
    kind = build_kind(got.cuda, got.hip)
    if backend == "cpu" and kind != "cpu":
        problems.append(f"a CPU Target got a GPU build (cuda={got.cuda!r}, hip={got.hip!r})")
    elif backend in ("cuda", "rocm") and kind != backend:
        problems.append(f"torch {got.version} is a {NAMES[kind]} build, the Target wants {NAMES[backend]} {accelerator}")
    elif backend in ("cuda", "rocm") and not accelerator_matches(got.cuda if backend == "cuda" else got.hip, accelerator):
        built = got.cuda if backend == "cuda" else got.hip
        field = "cuda" if backend == "cuda" else "hip"
        problems.append(f"torch.version.{field} is {built!r}, the Target wants {NAMES[backend]} {accelerator}")
    return problems
