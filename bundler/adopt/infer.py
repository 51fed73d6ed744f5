"""The Target a project states, checked against the compatibility table.

Statements come from a labelled torch pin (``torch==2.1.0+cu121``), a PyTorch index
line, ``nvidia-*-cu12`` packages, conda's ``pytorch-cuda``/``cudatoolkit``/``cpuonly``,
and for Python ``requires-python``/``python_requires``, ``.python-version``, a Pipfile's
``python_version`` or conda's ``python=``. Flags override every statement. Two
statements that contradict each other are refused naming both; a stated build the table
does not have becomes the nearest one it has, said so; what nobody states is guessed and
said to be a guess.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import canonicalize_name

from bundler.adopt.model import Hint, label_build
from bundler.adopt.sources import Sources
from bundler.errors import ProjectFileError, TargetError
from bundler.target.bundle import Target, validate_target
from bundler.target.table import CompatTable
from bundler.target.versions import version_key

DEFAULT_TORCH = "2.13.0"  # the template's default (template/cookiecutter.json)
DEFAULT_PYTHON = "3.11"
_INDEX_TAG = re.compile(r"download\.pytorch\.org/whl/(?:nightly/)?(cu\d+|rocm[\d.]+|cpu)\b")
_NVIDIA = re.compile(r"^nvidia-[a-z0-9-]+-cu(\d+)$")


@dataclass(frozen=True)
class Flags:
    cuda: str | None = None
    rocm: str | None = None
    cpu: bool = False
    torch: str | None = None
    python: str | None = None
    platform: str | None = None


@dataclass
class Inferred:
    target: Target
    stated: list[str] = field(default_factory=list)  # "torch 2.1.0: requirements.txt:3"
    guesses: list[str] = field(default_factory=list)
    adjusted: list[str] = field(default_factory=list)  # a stated build the table lacks, and the nearest one taken


def statements(sources: Sources, root: Path) -> list[Hint]:
    """Everything the project says about its Target, from every source read."""
    hints: list[Hint] = []
    for source in sources.found:
        hints += source.hints
        for dependency in source.dependencies:
            hints += _dependency_hints(dependency.line, dependency.origin)
        for url, origin in source.indexes:
            tag = _INDEX_TAG.search(url)
            if tag:
                backend, accelerator = label_build(tag.group(1))
                hints.append(Hint(f"{origin} ({url})", backend=backend, accelerator=accelerator))
    version_file = root / ".python-version"
    if version_file.is_file():
        first = version_file.read_text(encoding="utf-8", errors="replace").strip().split()
        match = re.match(r"^(\d+\.\d+)", first[0]) if first else None
        if match:
            hints.append(Hint(".python-version", python=match.group(1)))
    return hints


def _dependency_hints(line: str, origin: str) -> list[Hint]:
    try:
        requirement = Requirement(line)
    except InvalidRequirement:
        return []
    name = canonicalize_name(requirement.name)
    nvidia = _NVIDIA.match(name)
    if nvidia:
        return [Hint(f"{origin} ({name})", backend="cuda", accelerator=nvidia.group(1))]
    if name != "torch":
        return []
    exact = [s.version for s in requirement.specifier if s.operator in ("==", "===") and not s.version.endswith("*")]
    if not exact:
        return []
    public, _, label = exact[0].partition("+")
    backend, accelerator = label_build(label) if label else ("", "")
    return [Hint(f"{origin} ({line})", backend=backend, accelerator=accelerator, torch=public)]


def infer(sources: Sources, root: Path, table: CompatTable, flags: Flags) -> Inferred:
    hints = statements(sources, root)
    result = Inferred(Target("cpu", "", DEFAULT_TORCH, DEFAULT_PYTHON))
    platform = (flags.platform or "linux_x86_64").strip().replace("/", "_")
    torch = _torch(hints, sources, table, flags, result)
    backend, accelerator = _backend(hints, table, torch, platform, flags, result)
    python = _python(hints, table, torch, flags, result)
    target = validate_target(Target(backend, accelerator, torch, python, platform))
    build = table.build_for(target)  # flags that name a build the table lacks are refused here, naming the choices
    result.target = Target(backend, accelerator, torch, python, platform, base_image=table.base_images(build, python)["runtime"])
    return result


def _torch(hints: list[Hint], sources: Sources, table: CompatTable, flags: Flags, result: Inferred) -> str:
    if flags.torch:
        wanted = flags.torch.strip()
        return (table.latest_patch(wanted) or wanted + ".0") if re.fullmatch(r"\d+\.\d+", wanted) else wanted
    stated = [h for h in hints if h.torch]
    _refuse_contradiction("torch", [(h.torch, h.origin) for h in stated])
    known = table.torch_versions()
    if stated:
        wanted = stated[0].torch
        absent = f"torch {wanted} is not in the compatibility table; the nearest release it has, {{}}, is taken"
        return _stated(result, f"torch {wanted}: {stated[0].origin}", wanted, known, absent)
    ranges = _torch_ranges(sources)
    fitting = [v for v in known if all(spec.contains(v, prereleases=True) for spec, _ in ranges)]
    choice = DEFAULT_TORCH if DEFAULT_TORCH in fitting or not fitting else fitting[-1]
    if ranges and not fitting:
        result.adjusted.append(f"no torch release in the table fits {', '.join(f'{s} ({o})' for s, o in ranges)}; {choice} is taken")
    elif ranges:
        result.stated.append(f"torch {', '.join(str(s) for s, _ in ranges)}: {', '.join(o for _, o in ranges)}")
    result.guesses.append(
        f"torch {choice}" + (" (the newest that fits the stated range)" if choice != DEFAULT_TORCH else " (bundler's default)")
    )
    return choice


def _torch_ranges(sources: Sources) -> list[tuple[SpecifierSet, str]]:
    ranges = []
    for source in sources.found:
        for dependency in source.dependencies:
            try:
                requirement = Requirement(dependency.line)
            except InvalidRequirement:
                continue
            if canonicalize_name(requirement.name) == "torch" and str(requirement.specifier):
                ranges.append((requirement.specifier, dependency.origin))
    return ranges


def _backend(hints: list[Hint], table: CompatTable, torch: str, platform: str, flags: Flags, result: Inferred) -> tuple[str, str]:
    release = table.release(torch)
    if flags.cpu:
        return "cpu", ""
    if flags.cuda or flags.rocm:
        backend, value = ("cuda", flags.cuda) if flags.cuda else ("rocm", flags.rocm)
        value = str(value).strip().lower().removeprefix("cuda").removeprefix("rocm")
        return backend, label_build(value)[1] if value.startswith("cu") else value
    stated = [h for h in hints if h.backend]
    builds = sorted({(h.backend, h.accelerator) for h in stated})
    distinct = [b for b in builds if not any(o != b and o[0] == b[0] and o[1].startswith(b[1] + ".") for o in builds)]
    _refuse_contradiction(
        "torch build", [(f"{b} {a}".strip(), next(h.origin for h in stated if (h.backend, h.accelerator) == (b, a))) for b, a in distinct]
    )
    if not distinct:
        accelerator = table.default_accelerator(torch, "cuda")
        result.guesses.append(f"backend cuda {accelerator} (nothing states a build; pass --cpu, --cuda VER or --rocm VER to choose)")
        return "cuda", accelerator
    backend, accelerator = distinct[0]
    origin = next(h.origin for h in stated if (h.backend, h.accelerator) == distinct[0])
    result.stated.append(f"{backend} {accelerator}".strip() + f": {origin}")
    own = list(release.builds(backend, platform))
    if backend == "cpu" or accelerator in own:
        return backend, accelerator
    same_major = [v for v in own if v.split(".")[0] == accelerator.split(".")[0]]
    if "." not in accelerator and same_major:
        return backend, same_major[-1]
    if not own:
        raise TargetError(
            f"torch {torch} has no {backend} build for {platform}, which {origin} asks for.",
            hint="Pass --torch X.Y.Z or another backend flag.",
        )
    nearest = _nearest(own, accelerator)
    result.adjusted.append(f"torch {torch} has no {backend} {accelerator} build; the nearest it has, {backend} {nearest}, is taken")
    return backend, nearest


def _python(hints: list[Hint], table: CompatTable, torch: str, flags: Flags, result: Inferred) -> str:
    supported = sorted(table.release(torch).python, key=version_key)
    if flags.python:
        return flags.python.strip()
    exact, ranges = [], []
    for hint in (h for h in hints if h.python):
        text = hint.python.strip()
        if re.fullmatch(r"\d+\.\d+(\.\d+)?", text) or re.fullmatch(r"==\s*\d+\.\d+(\.\*|\.\d+)?", text):
            exact.append((".".join(re.sub(r"[=\s*]", "", text).rstrip(".").split(".")[:2]), hint.origin))
            continue
        try:
            ranges.append((SpecifierSet(text.replace(" ", "")), hint.origin))
        except InvalidSpecifier:
            result.guesses.append(f"Python: {hint.origin} says {text!r}, which bundler cannot read")
    _refuse_contradiction("Python", exact)
    for version, origin in exact:
        for spec, spec_origin in ranges:
            if not spec.contains(version + ".0", prereleases=True) and not spec.contains(version, prereleases=True):
                _refuse_contradiction("Python", [(version, origin), (str(spec), spec_origin)])
    fits = [
        v for v in supported if all(spec.contains(v + ".0", prereleases=True) or spec.contains(v, prereleases=True) for spec, _ in ranges)
    ]
    if exact:
        wanted, origin = exact[0]
        absent = f"torch {torch} has no wheels for Python {wanted}; the nearest Python it has, {{}}, is taken"
        return _stated(result, f"Python {wanted}: {origin}", wanted, supported, absent)
    choice = DEFAULT_PYTHON if DEFAULT_PYTHON in fits else (fits[-1] if fits else _nearest(supported, DEFAULT_PYTHON))
    if ranges:
        result.stated.append(f"Python {', '.join(str(s) for s, _ in ranges)}: {', '.join(o for _, o in ranges)}")
        if not fits:
            result.adjusted.append(f"no Python that torch {torch} supports fits {', '.join(str(s) for s, _ in ranges)}; {choice} is taken")
            return choice
    result.guesses.append(
        f"Python {choice}" + (" (the newest that fits the stated range)" if ranges and choice != DEFAULT_PYTHON else " (bundler's default)")
    )
    return choice


def _stated(result: Inferred, said: str, wanted: str, known: list[str], absent: str) -> str:
    """What the project states, when the table has it; else the nearest it has, said (``absent`` names it)."""
    result.stated.append(said)
    if wanted in known:
        return wanted
    nearest = _nearest(known, wanted)
    result.adjusted.append(absent.format(nearest))
    return nearest


def _refuse_contradiction(what: str, stated: list[tuple[str, str]]) -> None:
    values = list(dict.fromkeys(value for value, _ in stated))
    if len(values) > 1:
        first = next(origin for value, origin in stated if value == values[0])
        second = next(origin for value, origin in stated if value == values[1])
        raise ProjectFileError(
            f"the project states two different {what}s: {values[0]} ({first}) and {values[1]} ({second}).",
            hint="Decide which one the bundle is for and pass it as a flag (e.g. --cpu, --cuda 12.1, --torch 2.5.1, --python 3.11); "
            "bundler init changes neither file.",
            value=values[1],
        )


def _nearest(versions: list[str], wanted: str) -> str:
    """The lowest version at or above ``wanted``, else the highest below."""
    ordered = sorted(versions, key=version_key)
    above = [v for v in ordered if version_key(v) >= version_key(wanted)]
    return above[0] if above else ordered[-1]
