"""Requirements that name a place instead of a release: VCS URLs (``git+https://…``),
``name @ URL``, bare archive URLs, ``-e`` and local folders. They are decided before
anything is resolved, naming the line, with the routes that work:

- a released version (``name==X.Y``; bundler asks PyPI for the newest one when it can);
- a wheel built into the project: ``pip wheel --no-deps … -w wheels/`` and the line
  ``./wheels/<file>.whl``. Such a line is accepted: the wheel is resolved from the
  project's folder, its sha256 goes into the lock like every other hash, and the build
  installs that very file.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename

from bundler.errors import BundlerError, LockError, ProjectFileError
from bundler.lock.includes import SourceLine

_VCS = re.compile(r"^(git|hg|svn|bzr)\+", re.IGNORECASE)
_AT = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(\[[^\]]*\])?\s*@\s*(\S+)")
_EGG = re.compile(r"[#&]egg=([A-Za-z0-9][A-Za-z0-9._-]*)")


@dataclass(frozen=True)
class ProjectWheel:
    path: Path  # absolute
    relative: str  # as the project names it, e.g. wheels/x-1.0-py3-none-any.whl
    name: str  # canonical
    version: str

    @property
    def requirement(self) -> str:
        return f"{self.name}=={self.version}"

    def sha256(self) -> str:
        return hashlib.sha256(self.path.read_bytes()).hexdigest()


def is_direct_reference(text: str) -> bool:
    """A requirement line that names a URL, a VCS checkout, a local path or an editable."""
    head = text.split()[0]
    return (
        head in ("-e", "--editable")
        or head.startswith(("-e", "--editable="))
        or bool(_VCS.match(text))
        or "://" in text
        or bool(_AT.match(text))
        or head.startswith((".", "/", "~"))
        or head.endswith((".whl", ".tar.gz", ".zip", ".tar.bz2"))
    )


def project_wheel(root: Path, line: SourceLine) -> ProjectWheel | None:
    """The project's own wheel a line names (``./wheels/x-1.0-py3-none-any.whl``), else None."""
    head = line.text.split(";")[0].strip()
    if " " in head or not head.endswith(".whl") or "://" in head:
        return None
    candidate = (line.path.parent / head).resolve()
    if PurePosixPath(head).is_absolute() or root.resolve() not in candidate.parents or not candidate.is_file():
        return None
    try:
        name, version, _, _ = parse_wheel_filename(candidate.name)
    except InvalidWheelFilename:
        return None
    return ProjectWheel(candidate, str(candidate.relative_to(root.resolve())), canonicalize_name(name), str(version))


def project_wheel_digests(root: Path, lines: list[SourceLine]) -> list[tuple[str, str]]:
    found = [project_wheel(root, line) for line in lines]
    return [(wheel.relative, wheel.sha256()) for wheel in found if wheel is not None]


def refuse(root: Path, line: SourceLine) -> BundlerError:
    """The refusal of a direct reference: the line, what it is, and the routes that work."""
    kind, name = _kind_and_name(line.text)
    where = line.where(root)
    if kind == "a local wheel outside the project or missing":
        return ProjectFileError(
            f"{where}: {line.text} names a wheel that is not a file inside the project.",
            hint="Put the wheel in the project (e.g. wheels/) and name it by its relative path, e.g. `./wheels/NAME-VER-py3-none-any.whl`.",
            path=line.path,
            value=line.text,
        )
    release = latest_release(name) if name else None
    first = (
        f"pin the released version, `{name}=={release}` (the newest on PyPI)"
        if release
        else f"pin a released version (`{name}==X.Y`)"
        if name
        else "pin a released version (`NAME==X.Y`)"
    )
    source = line.text[3:].strip() if line.text.startswith("-e ") else line.text
    build = f"pip wheel --no-deps '{source}' -w wheels/"
    return LockError(
        f"{where}: {line.text!r} is {kind}, which a hashed lock cannot pin: the same line can give different code tomorrow, "
        "and the image builds offline.",
        hint=f"Either {first}, or build a wheel into the project (`{build}`) and list `./wheels/<the file>.whl` in its place: "
        "bundler locks the wheel's sha256 and installs that file.",
        path=line.path,
        value=line.text,
    )


def _kind_and_name(text: str) -> tuple[str, str]:
    head = text.split()[0]
    editable = head in ("-e", "--editable") or head.startswith(("-e", "--editable="))
    target = text.split(None, 1)[1] if head in ("-e", "--editable") and " " in text else text
    at = _AT.match(target)
    egg = _EGG.search(target)
    name = at.group(1) if at else egg.group(1) if egg else ""
    url = at.group(3) if at else target.split()[0].split("=", 1)[-1] if editable else target.split()[0]
    if not name and _VCS.match(url):
        name = re.sub(r"\.git$", "", url.split("#")[0].split("@")[0].rstrip("/").rsplit("/", 1)[-1])
    if editable:
        return "an editable install (-e)", canonicalize_name(name) if name else ""
    if _VCS.match(url):
        return "a VCS checkout", canonicalize_name(name) if name else ""
    if "://" in url:
        return "a direct URL", canonicalize_name(name) if name else _archive_name(url)
    if url.endswith(".whl"):
        return "a local wheel outside the project or missing", ""
    return "a local folder or archive", canonicalize_name(name) if name else ""


def latest_release(name: str) -> str | None:
    """The newest final release PyPI (or its mirror) lists for ``name``; None when unknown or unreachable."""
    from packaging.utils import InvalidSdistFilename, parse_sdist_filename

    from bundler.errors import ExternalError
    from bundler.lock.sources import PYPI_SIMPLE, index_files

    try:
        files = index_files(PYPI_SIMPLE, name)
    except (ExternalError, OSError, ValueError):
        return None
    versions = set()
    for item in files:
        try:
            parsed = parse_wheel_filename(item.filename) if item.filename.endswith(".whl") else parse_sdist_filename(item.filename)
        except (InvalidWheelFilename, InvalidSdistFilename):
            continue
        if not parsed[1].is_prerelease:
            versions.add(parsed[1])
    return str(max(versions)) if versions else None


def project_index(wheels: list[ProjectWheel], folder: Path) -> list[str]:
    """The project's wheels as a PEP 503 index in ``folder``: [its file:// URL], or [] without wheels.
    Resolution and the hashes read it like any index; the lock never records it."""
    import html

    for name in sorted({wheel.name for wheel in wheels}):
        page = folder / name
        page.mkdir(parents=True, exist_ok=True)
        links = "".join(f'<a href="{html.escape(w.path.as_uri())}">{html.escape(w.path.name)}</a>\n' for w in wheels if w.name == name)
        (page / "index.html").write_text(f"<!DOCTYPE html><html><body>\n{links}</body></html>\n", encoding="utf-8")
    return [folder.as_uri()] if wheels else []


def _archive_name(url: str) -> str:
    filename = url.split("#")[0].split("?")[0].rsplit("/", 1)[-1]
    if filename.endswith(".whl"):
        try:
            return str(canonicalize_name(parse_wheel_filename(filename)[0]))
        except InvalidWheelFilename:
            return ""
    match = re.match(r"^([A-Za-z0-9][A-Za-z0-9._]*?)-\d", filename)
    return canonicalize_name(match.group(1)) if match else ""
