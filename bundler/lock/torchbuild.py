"""Source archives whose build imports torch (PyG's scatter/sparse/cluster ops, attention
kernels, apex- and detectron-style C++/CUDA ops), at lock time.

pip prepares an sdist's metadata by running its build backend in an isolated environment
that has no torch, so such a package fails there ("No module named 'torch'") although its
pins are fine. Resolution does not need the build: its dependencies are read from the
archive's own metadata (PKG-INFO when it is static, else the ``*.egg-info/requires.txt``
written when the archive was made, else pyproject's static ``[project] dependencies``) and
handed to the resolver as a stand-in wheel on a local index of this lock alone. The
stand-in is never hashed nor recorded: the lock keeps the archive's own sha256, and its
sidecar says the pin is built by ``bundler build`` because its build imports torch.
"""

from __future__ import annotations

import base64
import email.parser
import hashlib
import html
import re
import tarfile
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import InvalidSdistFilename, canonicalize_name, parse_sdist_filename
from packaging.version import InvalidVersion, Version

from bundler.errors import ExternalError, LockError
from bundler.tomlcompat import loads as toml_loads

REASON = "its build imports torch, so pip cannot prepare it in an isolated environment"
PREPARED = "metadata prepared with the Target's torch installed"  # where torchprobe.py read the dependencies
MAX_ROUNDS = 12  # stand-ins added in one lock (each resolution that fails on such a package adds one)

# pip: "Failed to build 'torch-scatter' when getting requirements to build wheel"; uv: "Failed to build `torch-scatter==2.1.2`"
_FAILED = re.compile(r"Failed to build [`']([A-Za-z0-9][A-Za-z0-9._-]*)(?:==([^`'\s]+))?[`']")
_NO_TORCH = re.compile(r"(ModuleNotFoundError: No module named '?torch\b|ImportError: [^\n]*\btorch\b)")

# Projects that publish wheels for each torch build on an index of their own (kept as data).
PER_TORCH_INDEXES = {
    "torch-scatter": "https://data.pyg.org/whl/torch-{torch}+{build}.html",
    "torch-sparse": "https://data.pyg.org/whl/torch-{torch}+{build}.html",
    "torch-cluster": "https://data.pyg.org/whl/torch-{torch}+{build}.html",
    "torch-spline-conv": "https://data.pyg.org/whl/torch-{torch}+{build}.html",
    "pyg-lib": "https://data.pyg.org/whl/torch-{torch}+{build}.html",
    "flash-attn": "https://github.com/Dao-AILab/flash-attention/releases",
    "dgl": "https://data.dgl.ai/wheels/torch-{minor}/{build}/repo.html",
    "mmcv": "https://download.openmmlab.com/mmcv/dist/{build}/torch{minor}/index.html",
}

ARCHIVE_ERRORS = (tarfile.TarError, zipfile.BadZipFile, OSError, EOFError)  # what reading a source archive can raise
# what a build's own output says when it needs a GPU compiler (its setup.py's words, not a list of packages)
NEEDS_GPU_COMPILER = re.compile(
    r"CUDA_HOME|\bnvcc\b|cuda_runtime\.h|cuda\.h: No such file|No CUDA runtime|CUDA is not available|hipcc|ROCM_HOME"
)
_PIP_NOISE = re.compile(
    r"subprocess-exited-with-error|metadata-generation-failed|finished with status|^note:|^hint:|^\s*[│╰×]"
    r"|Building wheel for|Failed to build|ERROR: Failed building|Preparing metadata|^Processing /|^bundler: preparing metadata"
)
_TRACEBACK_LINE = re.compile(r"^(Traceback|During handling|The above exception|[~^]+$)")
# a package's notice that it is retired and what replaces it (the ``sklearn`` placeholder's first lines)
RETIRED_NOTICE = re.compile(r"\bdeprecated\b|\brather than\b", re.IGNORECASE)
_OWN_ERROR = re.compile(r"(\berror\b|Error:|fatal|undefined reference|No such file|" + RETIRED_NOTICE.pattern + ")", re.IGNORECASE)
NINJA_STEP = re.compile(r"^\[(\d+)/(\d+)\]\s")
_COMPILER = re.compile(r"(?:^|[\s/])(?:[\w-]+-)?(?:gcc|g\+\+|c\+\+|cc|clang\+\+|clang|nvcc|hipcc)(?:-[\d.]+)?\s")


def without_frames(text: str) -> list[str]:
    """A build's output without its traceback's frames (each ``File …`` line and the source line indented under it)."""
    kept, frame_indent = [], -1
    for raw in text.splitlines():
        line, indent = raw.strip(), len(raw) - len(raw.lstrip())
        source = frame_indent >= 0 and indent > frame_indent
        frame_indent = indent if line.startswith('File "') else -1
        if line and frame_indent < 0 and not source and not _TRACEBACK_LINE.match(line):
            kept.append(line)
    return kept


def compile_command(line: str) -> bool:
    """Whether ``line`` is a compiler's command line (ninja's ``[k/N]`` step or a compiler call), not its message."""
    return bool(NINJA_STEP.match(line) or (_COMPILER.search(line) and (" -c " in line or " -shared" in line)))


def own_lines(log: str, errors: int = 8, last: int = 4) -> str:
    """The package's own error lines (its compiler's and setup's, pip's framing and traceback frames left out), then the last
    lines of its output."""
    lines = [line for line in without_frames(log) if not _PIP_NOISE.search(line) and not compile_command(line)]
    picked = [line for line in lines if _OWN_ERROR.search(line)][:errors]
    picked += [line for line in lines[-last:] if line not in picked]
    return "\n  ".join(line.strip()[:300] for line in picked)


def per_torch_index(name: str, target) -> str:
    """The page where ``name`` publishes wheels for each torch build ("" when bundler knows none)."""
    page = PER_TORCH_INDEXES.get(str(canonicalize_name(name)), "")
    torch = target.torch
    if not page:
        return ""
    from bundler.target.table_file import load_table

    build = load_table().build_for(target).tag
    return page.format(torch=torch, build=build, minor=".".join(torch.split(".")[:2]))


def torch_build_failure(log: str) -> tuple[str, str] | None:
    """(name, version or "") of the package whose build backend needed torch, from the resolver's log; None otherwise."""
    if not _NO_TORCH.search(log):
        return None
    failed = _FAILED.findall(log)
    if not failed:
        return None
    name, version = failed[-1]
    return str(canonicalize_name(name)), version


@dataclass(frozen=True)
class Archive:
    name: str
    version: str
    filename: str
    sha256: str
    requires: tuple[str, ...]
    source: str  # where the dependencies were read: "PKG-INFO", "egg-info/requires.txt", "pyproject.toml"


@dataclass
class StandIns:
    """A local PEP 503 index of metadata-only wheels standing in for source archives that need torch to be prepared."""

    folder: Path
    archives: dict[tuple[str, str], Archive] = field(default_factory=dict)
    probe: Callable[[Path, str, str, str], list[str] | None] | None = None  # (archive, sha256, name, version) -> Requires-Dist

    @property
    def url(self) -> str:
        return self.folder.as_uri()

    def names(self) -> set[str]:
        return {name for name, _ in self.archives}

    def add(self, name: str, version: str, files: list, wanted: SpecifierSet, target) -> Archive:
        """Stand in for ``name`` (``version``, else the newest source-only release that ``wanted`` allows and no stand-in covers)."""
        sdist = _choose(name, version, files, wanted, {v for n, v in self.archives if n == name})
        if sdist is None:
            raise unpreparable(name, version, target, "no source archive of it is listed on the lock's indexes")
        try:
            archive = read_archive(name, sdist, target, self.probe)
        except OlderStandard as older:
            later = later_with_standard(name, older.version, files, older.needed)
            message, hint = older_standard_refusal(f"{name}=={older.version}", target.torch, older.needed, older.asked, later)
            raise LockError(message, hint=hint, value=name) from None
        self.archives[(name, archive.version)] = archive
        self._write(archive)
        return archive

    def _write(self, archive: Archive) -> None:
        page = self.folder / archive.name
        page.mkdir(parents=True, exist_ok=True)
        wheel = stand_in_wheel(page, archive)
        links = (
            "".join(
                f'<a href="{html.escape(path.as_uri())}">{html.escape(path.name)}</a>\n'
                for path in sorted(page.glob("*.whl"))
                if path != wheel
            )
            + f'<a href="{html.escape(wheel.as_uri())}">{html.escape(wheel.name)}</a>\n'
        )
        (page / "index.html").write_text(f"<!DOCTYPE html><html><body>\n{links}</body></html>\n", encoding="utf-8")


def source_archives(files: list) -> list[tuple[Version, object]]:
    """(version, IndexFile) of each source archive among an index's files."""
    found = []
    for item in files:
        try:
            found.append((parse_sdist_filename(item.filename)[1], item))
        except (InvalidSdistFilename, InvalidVersion):
            continue
    return found


def _choose(name: str, version: str, files: list, wanted: SpecifierSet, covered: set[str]):
    """The IndexFile of the source archive to stand in for."""
    candidates = [
        (found, item)
        for found, item in source_archives(files)
        if str(found) not in covered and (found == Version(version) if version else wanted.contains(found))
    ]
    return max(candidates, key=lambda pair: pair[0])[1] if candidates else None


def read_archive(name: str, item, target, probe=None) -> Archive:
    """Download the archive (hash-checked where the index names its sha256) and read its dependencies: from its static
    metadata, or, where only a build can tell them and wherever the Target is a CPU one (a CUDA-only build stops there),
    from ``probe``: its metadata prepared with the Target's torch installed. An archive whose build asks for an older C++
    standard than the Target's torch headers need raises OlderStandard before anything is prepared."""
    with tempfile.TemporaryDirectory(prefix="bundler-torchbuild-") as work:
        path, digest = _fetch(name, item, Path(work))
        _, version = parse_sdist_filename(item.filename)
        needed = needed_standard(target)
        asked = older_standard(path, needed)
        if asked is not None:
            raise OlderStandard(str(version), asked, needed)
        found = static_requirements(path)
        if probe is not None and (found is None or target.backend == "cpu"):
            try:
                prepared = probe(path, digest, str(canonicalize_name(name)), str(version))  # None: no engine to run it
            except ExternalError:
                if found is None:
                    raise
                prepared = None  # the probe could not run (its venv, its engine): the static metadata stands
            found = (prepared, PREPARED) if prepared is not None else found
    if found is None:
        raise unpreparable(name, str(version), target, f"its source archive {item.filename} declares its dependencies only when built")
    requires, source = found
    return Archive(str(canonicalize_name(name)), str(version), item.filename, digest, tuple(requires), source)


class OlderStandard(Exception):
    """An archive whose build asks for an older C++ standard than torch's headers need."""

    def __init__(self, version: str, asked: tuple[str, str], needed: int):
        super().__init__(version)
        self.version, self.asked, self.needed = version, asked, needed


def _fetch(name: str, item, work: Path) -> tuple[Path, str]:
    """The archive downloaded into ``work`` and its sha256, checked against the one its index names."""
    from bundler.pipsettings import host_pip_settings, open_url

    path = work / item.filename
    try:
        if item.url.startswith("file://"):
            from urllib.parse import unquote, urlsplit

            path.write_bytes(Path(unquote(urlsplit(item.url).path)).read_bytes())
        else:
            with open_url(item.url, host_pip_settings(), timeout=120) as response:
                path.write_bytes(response.read())
    except (OSError, ValueError) as error:
        raise ExternalError(
            f"{name}'s source archive {item.filename} could not be read from {item.url} ({error}); its build imports torch, so "
            "bundler reads its dependencies from the archive itself.",
            hint="Check the network and the proxy (PIP_PROXY / HTTPS_PROXY), then lock again.",
            value=name,
        ) from None
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if item.sha256 and digest != item.sha256:
        raise ExternalError(
            f"{item.url} does not match the sha256 its index names ({item.sha256[:16]}…).",
            hint="The index serves another file than it lists; try again, or check BUNDLER_INDEX_MAP.",
            value=item.filename,
        )
    return path, digest


LATER_READ = 4  # later releases read for one that asks for the C++ standard torch needs


def later_with_standard(name: str, version: str, files: list, needed: int) -> str:
    """The first release after ``version`` whose source archive does not ask for an older standard than ``needed``
    ("" when none of the next LATER_READ does)."""
    later = [(found, item) for found, item in source_archives(files) if found > Version(version) and not found.is_prerelease]
    for found, item in sorted(later, key=lambda pair: pair[0])[:LATER_READ]:
        with tempfile.TemporaryDirectory(prefix="bundler-torchbuild-") as work:
            try:
                path, _ = _fetch(name, item, Path(work))
            except ExternalError:
                continue
            if older_standard(path, needed) is None:
                return str(found)
    return ""


def static_requirements(sdist: Path) -> tuple[list[str], str] | None:
    """(Requires-Dist lines, where they were read) of a source archive, or None when only a build can tell."""
    members = archive_members(sdist)
    tops = sorted((n for n in members if n.count("/") == 1), key=len)
    pkg_info = next((n for n in tops if n.endswith("/PKG-INFO")), None)
    if pkg_info is not None:
        message = email.parser.Parser().parsestr(members[pkg_info]())
        dynamic = {value.lower() for value in message.get_all("Dynamic") or []}
        if Version(message.get("Metadata-Version", "1.0")) >= Version("2.2") and "requires-dist" not in dynamic:
            return list(message.get_all("Requires-Dist") or []), "PKG-INFO"
    egg = sorted((n for n in members if n.count("/") == 2 and n.endswith(".egg-info/PKG-INFO")), key=len)
    if egg:
        requires = egg[0].rsplit("/", 1)[0] + "/requires.txt"
        return (_requires_txt(members[requires]()) if requires in members else []), "egg-info/requires.txt"
    pyproject = next((n for n in tops if n.endswith("/pyproject.toml")), None)
    if pyproject is not None:
        project = toml_loads(members[pyproject]()).get("project", {})
        if project and "dependencies" not in project.get("dynamic", []):
            return [str(item) for item in project.get("dependencies", [])], "pyproject.toml"
    return None


def archive_members(sdist: Path) -> dict:
    """Member name -> a function reading it as text (only the metadata files an archive's top holds)."""
    wanted = re.compile(r"^[^/]+/(PKG-INFO|pyproject\.toml|[^/]+\.egg-info/(PKG-INFO|requires\.txt))$")
    found: dict = {}
    try:
        if sdist.name.endswith(".zip"):
            with zipfile.ZipFile(sdist) as archive:
                for name in archive.namelist():
                    if wanted.match(name):
                        found[name] = (lambda data: lambda: data)(archive.read(name).decode("utf-8", "replace"))
        else:
            with tarfile.open(sdist) as archive:
                for member in archive.getmembers():
                    if member.isfile() and wanted.match(member.name):
                        stream = archive.extractfile(member)
                        text = stream.read().decode("utf-8", "replace") if stream else ""
                        found[member.name] = (lambda data: lambda: data)(text)
    except ARCHIVE_ERRORS:
        return {}
    return found


def read_member_names(sdist: Path) -> list[str]:
    """Every member's name; raises one of ``ARCHIVE_ERRORS`` when the archive cannot be read."""
    if sdist.name.endswith(".zip"):
        with zipfile.ZipFile(sdist) as archive:
            return archive.namelist()
    with tarfile.open(sdist) as archive:
        return archive.getnames()


def member_names(sdist: Path) -> list[str]:
    """Every member's name ([] when the archive cannot be read)."""
    try:
        return read_member_names(sdist)
    except ARCHIVE_ERRORS:
        return []


def top_files(sdist: Path, filenames: tuple[str, ...]) -> dict[str, str]:
    """filename -> the text of ``<top>/filename`` for each of ``filenames`` the archive holds ({} when it cannot be read)."""

    def wanted(name: str) -> str | None:
        top, _, rest = name.partition("/")
        return rest if top and rest in filenames else None

    found: dict[str, str] = {}
    try:
        if sdist.name.endswith(".zip"):
            with zipfile.ZipFile(sdist) as zipped:
                for name in zipped.namelist():
                    if (short := wanted(name)) and short not in found:
                        found[short] = zipped.read(name).decode("utf-8", "replace")
        else:
            with tarfile.open(sdist) as tarred:
                for member in tarred.getmembers():
                    if member.isfile() and (short := wanted(member.name)) and short not in found:
                        stream = tarred.extractfile(member)
                        found[short] = stream.read().decode("utf-8", "replace") if stream else ""
    except ARCHIVE_ERRORS:
        return {}
    return found


def top_file(sdist: Path, filename: str) -> str:
    """The text of ``<top>/filename`` in the archive ("" when it has none or cannot be read)."""
    return top_files(sdist, (filename,)).get(filename, "")


# The C++ standard a build asks its compiler for: gcc/clang's -std=c++14 (gnu++14, c++1y), MSVC's /std:c++14, CMake's
# CMAKE_CXX_STANDARD 14 and cxx_std_14. torch's headers refuse an older one than the table's cxx_standard.
_STANDARD_FLAG = re.compile(r"(?:-std=(?:c|gnu)\+\+|/std:c\+\+|\bCMAKE_CXX_STANDARD\s+|\bcxx_std_)(\d\d|[01][xyz]|2[ab])\b")
_SPELLED = {"0x": 11, "1y": 14, "1z": 17, "2a": 20, "2b": 23}
_STANDARD_FILES = ("setup.py", "setup.cfg", "pyproject.toml", "CMakeLists.txt")


def _standard_year(spelled: str) -> int:
    number = _SPELLED.get(spelled) or int(spelled)
    return number + (1900 if number >= 90 else 2000)


def older_standard(sdist: Path, needed: int) -> tuple[str, str] | None:
    """(file, flag) when every C++ standard the archive's build files ask for is older than ``needed``; None when one of them
    is not (a setup.py choosing by torch's version names both) or they name none."""
    asked = []
    files = top_files(sdist, _STANDARD_FILES)
    if "setup.py" in files and "cmake" not in files["setup.py"].lower():
        files.pop("CMakeLists.txt", None)  # setuptools builds the extension; the CMake file builds a C++ library apart (PyG's)
    for filename, text in files.items():
        code = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
        asked += [(_standard_year(match.group(1)), filename, match.group(0).strip()) for match in _STANDARD_FLAG.finditer(code)]
    if not asked or max(asked)[0] >= _standard_year(str(needed)):
        return None
    _, filename, flag = max(asked)
    return filename, flag


def needed_standard(target) -> int:
    """The C++ standard the Target's torch headers need (the table's ``cxx_standard``)."""
    from bundler.target.table_file import load_table

    return load_table().release(target.torch).cxx_standard


def older_standard_refusal(pin: str, torch: str, needed: int, asked: tuple[str, str], later: str | None) -> tuple[str, str]:
    """(message, hint) for an archive whose build asks for an older C++ standard than torch's headers need; ``later``:
    the first later release whose build does not ("" when none was found, None when none was looked for)."""
    name = pin.partition("==")[0]
    message = (
        f"{pin} cannot build against torch {torch}: its {asked[0]} asks the compiler for {asked[1]}, and torch {torch}'s headers "
        f'need C++{needed} (they stop with "#error C++{needed} or later compatible compiler is required"): a release made for '
        "an older torch."
    )
    if later:
        hint = f"Pin {name}>={later} in requirements.in: its build asks for C++{needed} or names no older standard."
    elif later is None:
        hint = f"Pin a later release of {name}, one whose build asks for C++{needed}, and lock again (`bundler lock` looks for it)."
    else:
        hint = (
            f"No later release of {name} on the lock's indexes asks for C++{needed}: choose a torch that release was made for, "
            f"or build a wheel of it with -std=c++{needed} where it builds and list `./wheels/<the file>.whl` in requirements.in."
        )
    return message, hint


def _requires_txt(text: str) -> list[str]:
    """setuptools' requires.txt (``[extra:marker]`` sections) as Requires-Dist lines."""
    lines, extra, marker = [], "", ""
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            extra, _, marker = line[1:-1].partition(":")
            continue
        conditions = [f"({marker})"] if marker else []
        if extra:
            conditions.append(f'extra == "{extra}"')
        lines.append(line + (" ; " + " and ".join(conditions) if conditions else ""))
    return lines


def stand_in_wheel(folder: Path, archive: Archive) -> Path:
    """A metadata-only wheel of the archive's name, version and dependencies (resolution reads it; nothing installs it)."""
    dist = re.sub(r"[-_.]+", "_", archive.name)
    info = f"{dist}-{archive.version}.dist-info"
    metadata = "\n".join(
        [
            "Metadata-Version: 2.1",
            f"Name: {archive.name}",
            f"Version: {archive.version}",
            *(f"Requires-Dist: {r}" for r in archive.requires),
        ]
    )
    contents = {
        f"{info}/METADATA": metadata + "\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: bundler-stand-in\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = [
        f"{name},sha256={base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b'=').decode()},{len(text.encode())}"
        for name, text in contents.items()
    ]
    contents[f"{info}/RECORD"] = "\n".join(record + [f"{info}/RECORD,,"]) + "\n"
    path = folder / f"{dist}-{archive.version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as out:
        for name, text in contents.items():
            out.writestr(zipfile.ZipInfo(name, (1980, 1, 1, 0, 0, 0)), text)
    return path


def wanted_specifier(name: str, lines: list[str]) -> SpecifierSet:
    """What requirements.in asks of ``name`` (every version when it does not name it)."""
    specifier = SpecifierSet()
    for line in lines:
        try:
            requirement = Requirement(line.split(" #")[0].strip())
        except InvalidRequirement:
            continue
        if canonicalize_name(requirement.name) == name:
            specifier &= requirement.specifier
    return specifier


def unpreparable(name: str, version: str, target, why: str) -> LockError:
    """The refusal for a package whose build imports torch and whose dependencies bundler cannot read."""
    pin = f"{name}=={version}" if version else name
    page = per_torch_index(name, target)
    where = f" {name} publishes wheels for each torch build on {page}: build one there into ./wheels/ and list that file." if page else ""
    return LockError(
        f"{pin} cannot be resolved for {target.describe()}: {REASON} (its setup imports torch: \"No module named 'torch'\"), and {why}.",
        hint=f"Pin a release of {name} whose archive declares its dependencies, or one with a wheel for the Target; or build the wheel "
        f"with the Target's torch installed (`pip wheel --no-build-isolation --no-deps {pin} -w wheels/`) and list "
        f"`./wheels/<the file>.whl` in requirements.in.{where}",
        value=name,
    )


# ----- what was learnt, kept by archive hash (a hash names one file forever) -------------------------
def _known_path() -> Path:
    from bundler.pipsettings import cache_dir

    return cache_dir() / "torch-builds.json"


def known_torch_builds() -> set[str]:
    """The sha256 of every source archive a lock on this machine found to import torch in its build."""
    import json

    try:
        data = json.loads(_known_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return set()
    return {str(item) for item in data} if isinstance(data, list) else set()


def remember(digests: set[str]) -> None:
    import json

    from bundler.fsutil import atomic_write_text

    known = known_torch_builds()
    if digests <= known:
        return
    path = _known_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(sorted(known | digests)) + "\n")
