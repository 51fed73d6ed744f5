"""What PyPI itself says about torch and its companions, read without downloading a wheel.

For each release: the Linux wheels' file names (which Pythons have wheels), each Linux
wheel's core metadata (``Requires-Dist``: triton, the nvidia-* libraries, setuptools, the
``torch==`` a companion pins) from the PEP 658 ``.metadata`` file, and torch's own
``torch/version.py`` (``cuda = '12.8'``) read out of the wheel by HTTP range requests: the
zip's directory and one member, a few kB of a 900 MB file.

``record_facts`` gathers these as one JSON document (the fixture `bundler compat check
--offline` reads); bundler/lock/compatcheck.py derives the table's fields from it.
"""

from __future__ import annotations

import io
import json
import re
import zipfile
from concurrent.futures import ThreadPoolExecutor

from packaging.specifiers import SpecifierSet
from packaging.utils import InvalidWheelFilename, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from bundler.errors import ExternalError
from bundler.lock.hashes import IndexFile, project_files
from bundler.pipsettings import PipSettings, open_url

PYPI = "https://pypi.org/simple"
PROJECTS = {"torch": "2.1.0", "torchvision": "0.16.0", "torchaudio": "2.1.0"}  # project -> oldest release recorded
PLATFORMS = {"linux_x86_64": "x86_64", "linux_aarch64": "aarch64"}
FACTS_SCHEMA = 1
WORKERS = 8
_VERSION_PY = re.compile(r"^(__version__|cuda|hip)\b[^=]*=\s*(?:'([^']*)'|\"([^\"]*)\"|None)", re.MULTILINE)


class RangeFile(io.RawIOBase):
    """A remote file read by HTTP range requests: enough for zipfile to find one member."""

    def __init__(self, url: str, size: int, settings: PipSettings) -> None:
        self.url, self.size, self.settings, self.position = url, size, settings, 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.position

    def seek(self, offset: int, whence: int = 0) -> int:
        self.position = offset if whence == 0 else (self.position + offset if whence == 1 else self.size + offset)
        return self.position

    def readinto(self, buffer) -> int:
        end = min(self.size, self.position + len(buffer))
        if end <= self.position:
            return 0
        headers = {"Range": f"bytes={self.position}-{end - 1}"}
        with open_url(self.url, self.settings, headers=headers, timeout=60) as response:
            data = response.read()
        buffer[: len(data)] = data
        self.position += len(data)
        return len(data)


def wheel_member(url: str, member_suffix: str, settings: PipSettings) -> str:
    """The text of the first member of a remote wheel whose name ends with ``member_suffix``."""
    with open_url(url, settings, method="HEAD", timeout=60) as response:
        size = int(response.headers["Content-Length"])
    with zipfile.ZipFile(io.BufferedReader(RangeFile(url, size, settings), 1 << 16)) as archive:
        name = next(n for n in archive.namelist() if n.endswith(member_suffix))
        return archive.read(name).decode("utf-8", "replace")


def core_metadata(file: IndexFile, settings: PipSettings) -> str:
    """A wheel's METADATA: PEP 658's ``.metadata`` file where served, else read from the wheel."""
    import urllib.error

    try:
        with open_url(file.url + ".metadata", settings, timeout=60) as response:
            return response.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as error:
        if error.code != 404:
            raise
    return wheel_member(file.url, ".dist-info/METADATA", settings)


def requires_dist(metadata: str) -> list[str]:
    return [line.split(":", 1)[1].strip() for line in metadata.splitlines() if line.startswith("Requires-Dist:")]


def version_py(text: str) -> dict:
    """torch/version.py's __version__, cuda and hip (None where it says None)."""
    found = {match.group(1): match.group(2) or match.group(3) for match in _VERSION_PY.finditer(text)}
    return {key: found.get(key) for key in ("__version__", "cuda", "hip")}


def linux_wheels(files: list[IndexFile]) -> dict[str, list[IndexFile]]:
    """release -> its manylinux wheels (x86_64 and aarch64), pre-releases left out."""
    releases: dict[str, list[IndexFile]] = {}
    for file in files:
        if not file.filename.endswith(".whl") or "manylinux" not in file.filename:
            continue
        try:
            _, version, _, _ = parse_wheel_filename(file.filename)
        except (InvalidWheelFilename, InvalidVersion):
            continue
        if not version.is_prerelease and not version.local:
            releases.setdefault(str(version), []).append(file)
    return releases


def wheel_platform(filename: str) -> str:
    return next((platform for platform, arch in PLATFORMS.items() if filename.endswith(f"_{arch}.whl")), "")


def record_facts(settings: PipSettings, index: str = PYPI) -> dict:
    """Every fact ``compat check`` derives from, for each release since PROJECTS' floors."""
    jobs = []
    import datetime

    recorded = datetime.datetime.now(datetime.timezone.utc).date().isoformat()
    document: dict = {"schema": FACTS_SCHEMA, "index": index, "recorded": recorded, "projects": {}}
    for project, oldest in PROJECTS.items():
        releases = linux_wheels(project_files(index, project, settings))
        kept = {v: files for v, files in releases.items() if Version(v) >= Version(oldest)}
        document["projects"][project] = {v: {"wheels": sorted(f.filename for f in files)} for v, files in kept.items()}
        for version, files in kept.items():
            for platform in PLATFORMS:
                chosen = _one_wheel(files, platform)
                if chosen is not None:
                    jobs.append((project, version, platform, chosen))
    with ThreadPoolExecutor(WORKERS) as pool:
        for (project, version, platform, _), facts in zip(jobs, pool.map(lambda job: _wheel_facts(job, settings), jobs), strict=True):
            document["projects"][project][version][platform] = facts
    return document


def _one_wheel(files: list[IndexFile], platform: str) -> IndexFile | None:
    """The wheel read for a platform: a regular (not free-threaded) CPython build, newest Python first."""
    candidates = [f for f in files if wheel_platform(f.filename) == platform and not re.search(r"-cp\d+t-", f.filename)]
    return max(candidates, key=lambda f: f.filename, default=None)


def _wheel_facts(job: tuple, settings: PipSettings) -> dict:
    project, _, _, file = job
    try:
        facts = {"wheel": file.filename, "requires_dist": requires_dist(core_metadata(file, settings))}
        if project == "torch":
            facts["version_py"] = version_py(wheel_member(file.url, "torch/version.py", settings))
    except (OSError, ValueError, StopIteration, zipfile.BadZipFile) as error:
        raise ExternalError(
            f"could not read the metadata of {file.filename} from {file.url}: {error}",
            hint="Check the network and the proxy; PyPI must answer range requests for the wheel's directory.",
            value=file.url,
        ) from None
    return facts


# ----- what each release of a package asks of torch (bundler/lock/companions.py's pinned_torch) -------------------------
def torch_requirements(name: str, after: str, target) -> dict[str, SpecifierSet]:
    """For each final release of ``name`` newer than ``after`` with a wheel for the Target, what it requires of torch (an
    empty set: torch at any version); releases that do not require torch are left out. One wheel's METADATA per release,
    remembered by file name (a file's metadata never changes)."""
    from bundler.lock.sources import PYPI_SIMPLE, file_version, index_files, target_tags, wheel_fits

    try:
        files = index_files(PYPI_SIMPLE, name)
    except (ExternalError, OSError, ValueError):
        return {}
    tags = target_tags(target)
    chosen: dict[str, IndexFile] = {}
    for file in sorted(files, key=lambda f: f.filename):
        version = file_version(file.filename)
        later = version is not None and not version.is_prerelease and version > Version(after)
        if later and file.filename.endswith(".whl") and wheel_fits(file.filename, tags):
            chosen[str(version)] = file
    known = _known_requires()
    with ThreadPoolExecutor(WORKERS) as pool:
        read = dict(zip(chosen, pool.map(lambda f: known.get(f.filename) or _requires_or_none(f), chosen.values()), strict=True))
    _remember_requires(known | {chosen[v].filename: r for v, r in read.items() if r is not None})
    return {version: spec for version, found in read.items() if (spec := _torch_spec(found or [], target)) is not None}


def _requires_or_none(file: IndexFile) -> list[str] | None:
    from bundler.pipsettings import host_pip_settings

    try:
        if file.url.startswith("file://"):
            from urllib.parse import unquote, urlsplit

            with zipfile.ZipFile(unquote(urlsplit(file.url).path)) as archive:
                member = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
                return requires_dist(archive.read(member).decode("utf-8", "replace"))
        return requires_dist(core_metadata(file, host_pip_settings()))
    except (OSError, ValueError, StopIteration, KeyError, zipfile.BadZipFile):
        return None


def _torch_spec(requires: list[str], target) -> SpecifierSet | None:
    from packaging.requirements import InvalidRequirement, Requirement

    from bundler.lock.requirements import marker_holds

    for text in requires:
        try:
            requirement = Requirement(text)
        except InvalidRequirement:
            continue
        if requirement.name.lower() == "torch" and (requirement.marker is None or marker_holds(str(requirement.marker), target)):
            return requirement.specifier
    return None


def _requires_file():
    from bundler.pipsettings import cache_dir

    return cache_dir() / "wheel-requires.json"


def _known_requires() -> dict[str, list[str]]:
    try:
        data = json.loads(_requires_file().read_text(encoding="utf-8"))
        return {str(k): [str(i) for i in v] for k, v in data.items()} if isinstance(data, dict) else {}
    except (OSError, ValueError, AttributeError, TypeError):
        return {}


def _remember_requires(known: dict[str, list[str]]) -> None:
    import contextlib

    from bundler.fsutil import atomic_write_text

    with contextlib.suppress(OSError):  # a cache: a failed write only costs the next lock a look-up
        atomic_write_text(_requires_file(), json.dumps(known, sort_keys=True))
