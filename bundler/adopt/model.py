"""What a dependency source says, in one shape for every reader."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Dependency:
    """One requirement as a PEP 508 line, and where it was read."""

    line: str
    origin: str  # e.g. "pyproject.toml [project] dependencies"


@dataclass(frozen=True)
class Hint:
    """Something a source states about the Target: a backend build, a torch release or a Python."""

    origin: str
    backend: str = ""  # cuda | rocm | cpu, or "" when it says nothing of the build
    accelerator: str = ""  # "12.1"; for CUDA a major alone ("12") when only that is stated
    torch: str = ""
    python: str = ""  # a specifier (">=3.8,<3.11") or a version ("3.10")


@dataclass
class SourceRead:
    """One dependency source read: its requirements and everything else it says."""

    kind: str  # requirements | pep621 | poetry | setup.cfg | setup.py | pipfile | conda
    file: str  # relative to the project, posix
    dependencies: list[Dependency] = field(default_factory=list)
    hints: list[Hint] = field(default_factory=list)
    scripts: dict[str, str] = field(default_factory=dict)  # console script -> "module:function"
    indexes: list[tuple[str, str]] = field(default_factory=list)  # (index URL, origin)
    commands: list[str] = field(default_factory=list)  # commands the source runs (Pipfile [scripts])
    unreadable: list[str] = field(default_factory=list)  # "setup.py:12: install_requires is computed"
    left_out: list[str] = field(default_factory=list)  # names deliberately not requirements, with why
    unmapped: list[str] = field(default_factory=list)  # conda names with no PyPI name known
    notes: list[str] = field(default_factory=list)
    name: str = ""  # the project's distribution name, when the source gives one
    builds_package: bool = False  # a build system that makes the project's own wheel


def label_build(label: str) -> tuple[str, str]:
    """(backend, accelerator) of a PyTorch build label: cu121 -> cuda 12.1, rocm6.0 -> rocm 6.0, cpu."""
    import re

    label = label.lower()
    if label == "cpu":
        return "cpu", ""
    cuda = re.fullmatch(r"cu(\d+)(\d)", label)
    if cuda:
        return "cuda", f"{cuda.group(1)}.{cuda.group(2)}"
    rocm = re.fullmatch(r"rocm(\d+(?:\.\d+)+)", label)
    if rocm:
        return "rocm", rocm.group(1)
    return "", ""
