"""requirements.in and the files it includes (``-r common.txt``), read as one list of lines.

An include is followed when it names a file inside the project (relative to the file
that includes it, as pip reads it); one outside the project, an absolute path, a URL, a
missing file or a loop is refused naming the line. The lock's input hash covers every
included file (``input_text``), so editing ``common.txt`` makes the lock stale.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from bundler.errors import ProjectFileError

REQUIREMENTS_IN = "requirements.in"
_INCLUDE = re.compile(r"^(-r|--requirement)(?:\s*=\s*|\s+|(?=[^\s-]))(\S+)$")
_COMMENT = re.compile(r"(^|\s)#.*$")


@dataclass(frozen=True)
class SourceLine:
    """One logical line of a requirements file: comments dropped, continuations joined."""

    path: Path
    number: int
    text: str

    def where(self, root: Path) -> str:
        try:
            shown = self.path.relative_to(root)
        except ValueError:
            shown = self.path
        return f"{shown}:{self.number}"


def logical_lines(path: Path, text: str) -> list[SourceLine]:
    lines, current, start = [], "", 0
    for number, raw in enumerate(text.splitlines(), 1):
        stripped = _COMMENT.sub("", raw).rstrip()
        if not current:
            start = number
        if stripped.endswith("\\"):
            current += stripped[:-1] + " "
            continue
        current = (current + stripped).strip()
        if current:
            lines.append(SourceLine(path, start, current))
        current = ""
    if current.strip():
        lines.append(SourceLine(path, start, current.strip()))
    return lines


def include_target(line: SourceLine) -> str | None:
    """The file a ``-r`` line names, or None when the line is no include."""
    match = _INCLUDE.match(line.text)
    return match.group(2) if match else None


def read_lines(root: Path) -> list[SourceLine]:
    """requirements.in's lines with every include expanded in place (ProjectFileError on a bad one)."""
    root = Path(root).resolve()
    first = root / REQUIREMENTS_IN
    if not first.is_file():
        raise ProjectFileError(
            f"{first} not found: bundler lock resolves the project's direct dependencies from it.",
            hint="Create it with one requirement per line, e.g. `torch==2.13.0` and `numpy`.",
            path=first,
        )
    if root not in first.resolve().parents:
        raise ProjectFileError(
            f"{first} is a link to {first.resolve()}, outside the project: it would not travel with it.",
            hint="Copy the file into the project in place of the link "
            f"(cp --remove-destination {shlex.quote(str(first.resolve()))} {shlex.quote(str(first))}).",
            path=first,
        )
    return _expand(root, first, ())


def _expand(root: Path, path: Path, chain: tuple[Path, ...]) -> list[SourceLine]:
    result = []
    for line in logical_lines(path, _read(path)):
        named = include_target(line)
        if named is None:
            result.append(line)
            continue
        included = _included_file(root, line, named)
        if included in chain or included == path:
            loop = " -> ".join(str(p.relative_to(root)) for p in (*chain, path, included))
            raise ProjectFileError(
                f"{line.where(root)}: {line.text} includes a file that includes it back ({loop}).",
                hint="Remove one of the includes: each file may be read once.",
                path=path,
                value=line.text,
            )
        result += _expand(root, included, (*chain, path))
    return result


def _included_file(root: Path, line: SourceLine, named: str) -> Path:
    if "://" in named:
        raise ProjectFileError(
            f"{line.where(root)}: {line.text} includes a file from a URL, which the lock could not record.",
            hint="Download the file into the project and include it by its relative path (`-r common.txt`).",
            path=line.path,
            value=line.text,
        )
    candidate = Path(named).expanduser()
    resolved = (candidate if candidate.is_absolute() else line.path.parent / candidate).resolve()
    if candidate.is_absolute() or root not in (resolved, *resolved.parents):
        raise ProjectFileError(
            f"{line.where(root)}: {line.text} includes {resolved}, which is outside the project {root}: "
            "files outside the project do not travel with it.",
            hint=f"Copy the file into the project (e.g. {root / Path(named).name}) and include it by its relative path.",
            path=line.path,
            value=line.text,
        )
    if not resolved.is_file():
        raise ProjectFileError(
            f"{line.where(root)}: {line.text} includes {resolved}, which does not exist.",
            hint="Fix the path (it is read relative to the file that includes it) or remove the line.",
            path=line.path,
            value=line.text,
        )
    return resolved


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8-sig")  # a byte order mark, as Windows editors write it, is no part of line 1
    except UnicodeDecodeError as error:
        raise ProjectFileError(f"{path} is not UTF-8 text (byte {error.start}).", hint="Save it as UTF-8.", path=path) from None


def input_text(root: Path) -> str | None:
    """What the lock's input hash covers: requirements.in, then each included file and each
    project wheel it names (their path and content). None without requirements.in.

    Lenient: a file it cannot follow is hashed as missing, so the lock reads as stale and
    `bundler lock` names the problem.
    """
    root = Path(root).resolve()
    first = root / REQUIREMENTS_IN
    if not first.is_file():
        return None
    text = first.read_text(encoding="utf-8", errors="replace")
    extra = []
    try:
        lines = read_lines(root)
    except ProjectFileError as error:
        return text + f"\0unreadable include: {error.message}"
    for path in sorted({line.path for line in lines} - {first}):
        extra.append(f"\0include {path.relative_to(root)}\n{path.read_text(encoding='utf-8', errors='replace')}")
    from bundler.lock.directrefs import project_wheel_digests

    extra += [f"\0wheel {name} {digest}" for name, digest in project_wheel_digests(root, lines)]
    return text + "".join(extra)
