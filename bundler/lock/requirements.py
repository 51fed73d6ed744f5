"""requirements.in as the resolver sees it, decided in seconds before anything is resolved.

Every line of requirements.in and of the files it includes (bundler/lock/includes.py) is
one of:
- an option line (bundler/lock/indexlines.py): dropped with a note, kept as a recorded
  extra index, passed to the resolver, or refused naming the line;
- a direct reference, a URL, VCS checkout, ``-e`` or a local folder
  (bundler/lock/directrefs.py): refused naming the line with the routes that work,
  except a wheel inside the project, which is accepted and locked by its hash;
- a requirement whose marker does not hold on the Target: dropped with a note (so two
  torch lines for x86_64 and for Darwin/aarch64 are one line for the Target);
- torch or a companion: replaced by the Target's exact build;
- any other requirement: passed through.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from bundler.errors import LockError, ProjectFileError
from bundler.lock import directrefs, markers
from bundler.lock.includes import REQUIREMENTS_IN, SourceLine, read_lines
from bundler.lock.indexlines import OptionOutcome, handle_option
from bundler.target.bundle import Target

__all__ = ["REQUIREMENTS_IN", "CompiledInput", "compile_input", "line_name"]

_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
_PER_REQUIREMENT_OPTION = re.compile(r"\s--(hash|global-option|config-settings)[=\s]\S+")


@dataclass
class CompiledInput:
    lines: list[str] = field(default_factory=list)  # the resolver's requirements.in
    notes: list[str] = field(default_factory=list)
    direct: list[str] = field(default_factory=list)  # canonical names of the Target's direct dependencies
    extra_indexes: list[str] = field(default_factory=list)
    project_wheels: list[directrefs.ProjectWheel] = field(default_factory=list)

    @property
    def find_links(self) -> list[str]:
        return sorted({str(wheel.path.parent) for wheel in self.project_wheels})


def line_name(line: str) -> str:
    match = _NAME.match(line)
    return canonicalize_name(match.group(1)) if match else ""


def compile_input(root: Path, companions: dict[str, str], target: Target, build, input_name: str = REQUIREMENTS_IN) -> CompiledInput:
    """requirements.in (with its includes) for the Target, or the first line that cannot be locked."""
    root = Path(root).resolve()
    result, options = CompiledInput(), OptionOutcome()
    companion_lines: dict[str, SourceLine] = {}
    for line in read_lines(root, input_name):
        if line.text.startswith("-") and not line.text.startswith(("-e", "--editable")):
            handle_option(root, line, build, options)
            continue
        wheel = directrefs.project_wheel(root, line)
        if wheel is not None:
            result.project_wheels.append(wheel)
            result.lines.append(wheel.requirement)
            _add_direct(result, wheel.name)
            continue
        if directrefs.is_direct_reference(line.text):
            raise directrefs.refuse(root, line)
        requirement = _parse(root, line)
        if requirement.marker is not None and not markers.marker_holds(requirement.marker, target):
            result.notes.append(f"{line.where(root)}: {line.text} does not apply to the Target ({markers.describe(target)}); skipped.")
            continue
        name = canonicalize_name(requirement.name)
        _add_direct(result, name)
        if name not in companions:
            result.lines.append(line.text)
            continue
        if name in companion_lines:
            first = companion_lines[name]
            raise LockError(
                f"{line.where(root)}: {name} is listed twice for the Target ({markers.describe(target)}): "
                f"{first.text!r} ({first.where(root)}) and {line.text!r}.",
                hint="Keep one line per package, or give the lines markers that exclude each other "
                '(e.g. `; platform_machine == "x86_64"` and `; sys_platform == "darwin"`).',
                path=line.path,
                value=line.text,
            )
        companion_lines[name] = line
        result.lines.append(_companion(root, line, requirement, name, companions[name], target, result.notes))
    if "torch" not in companion_lines:
        result.lines.insert(0, f"torch=={companions['torch']}")
        result.notes.append(f"{input_name} does not list torch; torch=={companions['torch']} is added from the Target.")
        _add_direct(result, "torch")
    result.lines = options.lines + result.lines
    result.notes = options.notes + result.notes
    result.extra_indexes = options.extra_indexes
    return result


def _add_direct(result: CompiledInput, name: str) -> None:
    if name not in result.direct:
        result.direct.append(name)


def _parse(root: Path, line: SourceLine) -> Requirement:
    try:
        return Requirement(_PER_REQUIREMENT_OPTION.sub("", " " + line.text).strip())
    except InvalidRequirement as error:
        raise ProjectFileError(
            f"{line.where(root)}: {line.text!r} is not a requirement ({str(error).splitlines()[0].rstrip('.')}).",
            hint='Write one PEP 508 requirement per line, e.g. `numpy>=1.26` or `torch==2.13.0; platform_machine == "x86_64"`.',
            path=line.path,
            value=line.text,
        ) from None


def _companion(root: Path, line: SourceLine, requirement: Requirement, name: str, wanted: str, target: Target, notes: list) -> str:
    """The Target's exact build of torch or a companion, checked against what the line asks."""
    public = Version(wanted).public
    exact = [s for s in requirement.specifier if s.operator in ("==", "===")]
    if requirement.specifier and not exact and not requirement.specifier.contains(Version(public), prereleases=True):
        raise LockError(
            f"{line.where(root)}: {line.text!r} excludes {name} {public}, the version paired with torch {target.torch}.",
            hint=f"Remove the specifier (bundler pins {name}=={wanted} for the Target), or choose another torch with --torch.",
            path=line.path,
            value=line.text,
        )
    if any(Version(s.version.split("+")[0].rstrip(".*")) != Version(public) for s in exact):
        notes.append(f"{line.where(root)} pins {line.text}; the Target's {name}=={wanted} is used instead (bundle.toml [target]).")
    return f"{name}=={wanted}"
