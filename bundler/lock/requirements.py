"""requirements.in as the resolver sees it: torch and its companions replaced by the
Target's exact builds, options that would carry host paths or indexes refused."""

from __future__ import annotations

import re
from pathlib import Path

from packaging.utils import canonicalize_name

from bundler.errors import LockError, ProjectFileError
from bundler.target.bundle import Bundle, Target

REQUIREMENTS_IN = "requirements.in"
_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
_FORBIDDEN_OPTIONS = (
    "-i",
    "--index-url",
    "--extra-index-url",
    "-f",
    "--find-links",
    "--trusted-host",
    "-r",
    "--requirement",
    "-c",
    "--constraint",
    "-e",
    "--editable",
)


def read_requirements_in(bundle: Bundle) -> str:
    path = bundle.root / REQUIREMENTS_IN
    if not path.is_file():
        raise ProjectFileError(
            f"{path} not found: bundler lock resolves the project's direct dependencies from it.",
            hint="Create it with one requirement per line, e.g. `torch==2.13.0` and `numpy`.",
            path=path,
        )
    return path.read_text(encoding="utf-8")


def line_name(line: str) -> str:
    match = _NAME.match(line)
    return canonicalize_name(match.group(1)) if match else ""


def compile_input(path: Path, text: str, companions: dict[str, str], target: Target) -> tuple[list[str], list[str]]:
    """requirements.in with torch and companions replaced by the Target's exact builds."""
    lines, notes, seen = [], [], set()
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.split(" #", 1)[0].strip()
        if not line or line.startswith("#"):
            continue
        option = line.split()[0].split("=")[0]
        if line.startswith("-"):
            if option in _FORBIDDEN_OPTIONS:
                raise ProjectFileError(
                    f"{path}:{number}: {option} is not allowed in requirements.in ({line}).",
                    hint="Indexes come from the Target (bundle.toml) and host paths do not travel; list plain requirements only.",
                    path=path,
                    value=line,
                )
            lines.append(line)
            continue
        if line_name(line) not in companions:
            lines.append(line)  # passes through untouched: pip-compile reports a malformed line
            continue
        from packaging.requirements import InvalidRequirement, Requirement
        from packaging.version import Version

        try:
            requirement = Requirement(line)
        except InvalidRequirement as error:
            raise ProjectFileError(
                f"{path}:{number}: {line!r} is not a requirement ({error}).",
                hint="Write one PEP 508 requirement per line.",
                path=path,
                value=line,
            ) from None
        name = canonicalize_name(requirement.name)
        if name in seen:
            raise LockError(f"{path}:{number}: {name} is listed twice.", hint="Keep one line per package.", path=path, value=line)
        seen.add(name)
        wanted = companions[name]
        public = Version(wanted).public
        if (
            requirement.specifier
            and not requirement.specifier.contains(Version(public), prereleases=True)
            and not any(s.operator == "==" for s in requirement.specifier)
        ):
            raise LockError(
                f"{path}:{number}: {line!r} excludes {name} {public}, the version paired with torch {target.torch}.",
                hint=f"Remove the specifier (bundler pins {name}=={wanted} for the Target), or choose another torch with --torch.",
                path=path,
                value=line,
            )
        if any(s.operator == "==" and Version(s.version.split("+")[0]) != Version(public) for s in requirement.specifier):
            notes.append(f"requirements.in pins {line}; the Target's {name}=={wanted} is used instead (bundle.toml [target]).")
        lines.append(f"{name}=={wanted}")
    if "torch" not in seen:
        lines.insert(0, f"torch=={companions['torch']}")
        notes.append(f"requirements.in does not list torch; torch=={companions['torch']} is added from the Target.")
    return lines, notes
