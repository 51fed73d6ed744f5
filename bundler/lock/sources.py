"""Which locked pins have no wheel for the Target, so the build must make one from the
source archive — decided at lock time, with the reason.

A lock line allows the hashes of every file of that release (all platforms). Each hash
is matched to its file name on the lock's indexes (PyPI first), and the wheels among
them are checked against the Target's tags (CPython X.Y, Linux, its architecture,
manylinux up to glibc 2.35). A pin with no compatible wheel but a source archive is a
``SourceBuild``. File names are cached by hash (a hash names one file forever), so a
re-lock asks the indexes only about new pins.
"""

from __future__ import annotations

import json
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.tags import Tag, compatible_tags, cpython_tags
from packaging.utils import InvalidSdistFilename, InvalidWheelFilename, parse_sdist_filename, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from bundler.errors import ExternalError
from bundler.fsutil import sha256_file
from bundler.lock.hashes import IndexFile, project_files
from bundler.pipsettings import cache_dir, host_pip_settings, index_map, reachable_url
from bundler.target.versions import platform_tags

PYPI_SIMPLE = "https://pypi.org/simple"
SDIST_SUFFIXES = (".tar.gz", ".zip", ".tar.bz2", ".tgz")


@dataclass(frozen=True)
class SourceBuild:
    name: str
    version: str
    sdist: str  # file name of the source archive
    sdist_sha256: str
    why: str

    @property
    def pin(self) -> str:
        return f"{self.name}=={self.version}"

    def as_dict(self) -> dict:
        return asdict(self)


def target_tags(target) -> set[Tag]:
    version = tuple(int(part) for part in target.python.split(".")[:2])
    platforms = platform_tags(target.platform)
    interpreter = f"cp{version[0]}{version[1]}"
    return set(cpython_tags(version, platforms=platforms)) | set(compatible_tags(version, interpreter, platforms))


def wheel_fits(filename: str, tags: set[Tag]) -> bool:
    try:
        return bool(parse_wheel_filename(filename)[3] & tags)
    except InvalidWheelFilename:
        return False


def is_sdist(filename: str) -> bool:
    return filename.endswith(SDIST_SUFFIXES)


def file_version(filename: str) -> Version | None:
    """The release a wheel or source archive belongs to (None for a name that parses as neither)."""
    try:
        if filename.endswith(".whl"):
            return parse_wheel_filename(filename)[1]
        return parse_sdist_filename(filename)[1] if is_sdist(filename) else None
    except (InvalidWheelFilename, InvalidSdistFilename, InvalidVersion):
        return None


def admits_python(file: IndexFile, python: str) -> bool:
    """Whether the file's Requires-Python admits CPython ``python`` (X.Y): a file that says nothing, or says it
    unreadably, admits every Python, as pip takes it."""
    try:
        return not file.requires_python or SpecifierSet(file.requires_python).contains(f"{python}.0", prereleases=True)
    except InvalidSpecifier:
        return True


def first_admitting_release(files: list[IndexFile], after: str, python: str) -> str:
    """The first final release newer than ``after`` whose files admit CPython ``python``; "" when none does."""
    admitting = {file_version(f.filename) for f in files if admits_python(f, python)}
    newer = sorted(v for v in admitting if v is not None and not v.is_prerelease and v > Version(after))
    return str(newer[0]) if newer else ""


def first_fitting_release(files: list[IndexFile], after: str, tags: set[Tag]) -> str:
    """The first final release newer than ``after`` with a wheel among ``files`` (one project's listing) that fits
    ``tags``; "" when the index lists none."""
    fitting = {file_version(f.filename) for f in files if f.filename.endswith(".whl") and wheel_fits(f.filename, tags)}
    newer = sorted(v for v in fitting if v is not None and not v.is_prerelease and v > Version(after))
    return str(newer[0]) if newer else ""


def wheel_route(name: str, version: str, files: list[IndexFile], target) -> str:
    """One sentence (no final stop) on what to do about a ``name==version`` whose source build fails on the Target:
    the release with a wheel to pin, or that none exists, read from the project's listing ``files`` ([] when unread)."""
    own = "follow its own words above"
    if not files:
        return f"Follow its own words above, or pin a release of {name} that publishes a wheel for the Target"
    tags = target_tags(target)
    first = first_fitting_release(files, version, tags)
    if first:
        return f"Follow its own words above, or pin {name}=={first}, the first release with a wheel for the Target"
    fitting = {file_version(f.filename) for f in files if f.filename.endswith(".whl") and wheel_fits(f.filename, tags)}
    finals = [v for v in fitting if v is not None and not v.is_prerelease]
    if finals:
        return f"Follow its own words above, or pin {name}=={max(finals)}, the newest release with a wheel for the Target"
    ceiling = python_ceiling([f.filename for f in files if f.filename.endswith(".whl")])
    if ceiling is not None:
        return (
            f"No release of {name} has a wheel for CPython {target.python} on {target.platform} (its wheels stop at CPython "
            f"{ceiling[0]}.{ceiling[1]}), so its source build must succeed: {own}, or choose a Target on Python {ceiling[0]}.{ceiling[1]}"
        )
    return f"No release of {name} publishes a wheel for {target.platform}, so its source build must succeed: {own}"


def listed_wheel_route(name: str, version: str, target) -> str:
    """``wheel_route`` read from PyPI's listing of ``name`` (or its mirror): what to pin instead, or that no release
    has a wheel for the Target."""
    try:
        files = index_files(PYPI_SIMPLE, name) if version else []
    except (ExternalError, OSError, ValueError):
        files = []
    return wheel_route(name, version, files, target)


def python_ceiling(wheels: list[str]) -> tuple[int, int] | None:
    """The newest CPython minor that one of these wheels is built for (cp38 -> (3, 8)); None when a wheel is for any
    Python 3 (py3, abi3) or none names a CPython."""
    minors = []
    for filename in wheels:
        try:
            tags = parse_wheel_filename(filename)[3]
        except InvalidWheelFilename:
            continue
        for tag in tags:
            if tag.abi == "abi3" or not tag.interpreter.startswith("cp"):
                return None
            minors.append((int(tag.interpreter[2]), int(tag.interpreter[3:] or 0)))
    return max(minors) if minors else None


def source_builds(pins, indexes: list[str], target, skip: set[str], notes: list[str]) -> list[SourceBuild]:
    """The pins (``Pin``s with hashes) that the build must make wheels for, with the reason."""
    names = _known_filenames()
    wanted = [pin for pin in pins if pin.name not in skip and pin.hashes]
    unknown = [pin for pin in wanted if not all(digest in names for digest in pin.hashes)]
    order = [PYPI_SIMPLE] + [url for url in indexes if url.rstrip("/") != PYPI_SIMPLE]
    for index in order:
        if not unknown:
            break
        with ThreadPoolExecutor(max_workers=8) as pool:
            pages = list(pool.map(lambda pin, index=index: _files_or_none(index, pin.name), unknown))
        for pin, files in zip(unknown, pages, strict=True):
            for item in files or ():
                if item.sha256 in pin.hashes:
                    names[item.sha256] = item.filename
        unknown = [pin for pin in unknown if not all(digest in names for digest in pin.hashes)]
    _remember(names)
    tags = target_tags(target)
    found = []
    for pin in wanted:
        known = {digest: names[digest] for digest in pin.hashes if digest in names}
        wheels = [name for name in known.values() if name.endswith(".whl")]
        if any(wheel_fits(name, tags) for name in wheels):
            continue
        sdists = [(digest, name) for digest, name in known.items() if is_sdist(name)]
        if len(known) < len(pin.hashes) or not sdists:
            notes.append(f"could not tell whether {pin.name}=={pin.version} has a wheel for the Target (its files are not all listed).")
            continue
        digest, sdist = sdists[0]
        found.append(SourceBuild(pin.name, pin.version, sdist, digest, _why(sdist, wheels, target)))
    return found


def _why(sdist: str, wheels: list[str], target) -> str:
    if not wheels:
        return f"only a source archive is published ({sdist})"
    shown = ", ".join(sorted(wheels)[:2]) + (" …" if len(wheels) > 2 else "")
    return f"none of its {len(wheels)} wheels fits CPython {target.python} on {target.platform} ({shown})"


def index_files(index: str, project: str) -> list[IndexFile]:
    """The files the lock's index ``index`` (a public URL) lists for ``project``, each with its sha256
    where the page gives it or the file is on this host (a local index rarely carries hashes)."""
    settings = host_pip_settings()
    files = project_files(reachable_url(index, index_map(), settings), project, settings)
    return [replace(f, sha256=f.sha256 or _local_hash(f.url)) for f in files]


def _local_hash(url: str) -> str:
    from urllib.parse import unquote, urlsplit

    path = Path(unquote(urlsplit(url).path)) if url.startswith("file://") else None
    return sha256_file(path) if path is not None and path.is_file() else ""


def _files_or_none(index: str, project: str) -> list[IndexFile] | None:
    try:
        return index_files(index, project)
    except (ExternalError, OSError, ValueError):
        return None


def _names_file() -> Path:
    return cache_dir() / "index-files.json"


def _known_filenames() -> dict[str, str]:
    try:
        data = json.loads(_names_file().read_text(encoding="utf-8"))
        return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _remember(names: dict[str, str]) -> None:
    path = _names_file()
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    try:
        partial.write_text(json.dumps(names, sort_keys=True), encoding="utf-8")
        os.replace(partial, path)
    except OSError:
        partial.unlink(missing_ok=True)
