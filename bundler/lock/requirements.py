"""requirements.in as the resolver sees it: read once (with its includes), every line decided
before anything is resolved. The one reader of requirements files.

**Reading.** pip's logical lines (``contracts/lockformat.py``). An include (``-r common.txt``)
is followed when it names a file inside the project (relative to the file that includes
it, as pip reads it); one outside the project, an absolute path, a URL, a missing file or
a loop is refused naming the line. The lock's input hash covers every included file and
every project wheel (``input_text``), so editing ``common.txt`` makes the lock stale.

**Deciding.** Every line is one of:
- an option line: ``--index-url`` / ``--extra-index-url`` naming PyTorch's index for the
  Target's own build (or PyPI) is redundant, dropped with a note; PyTorch's index for another
  build is refused; any other https index given with ``--extra-index-url`` is kept as an
  extra index, recorded in the lock's header (hashes are still required for every file);
  with credentials in the URL, over plain http, or given with ``--index-url`` (which would
  replace PyPI): refused. ``--find-links``, ``--trusted-host``, ``-c`` are refused (host
  paths, unverified hosts, constraints the lock could not record); ``--pre``,
  ``--prefer-binary``, ``--only-binary``, ``--no-binary`` pass to the resolver;
- a direct reference (a VCS URL ``git+https://…``, ``name @ URL``, a bare archive URL,
  ``-e``, a local folder): refused naming the line with the routes that work (a released
  version, PyPI's newest named when it can be asked; or a wheel built into the project).
  A wheel inside the project (``./wheels/<file>.whl``) is accepted: resolved from the
  project's folder as an index of its own, its sha256 locked like every other hash;
- a requirement whose environment marker does not hold on the Target (Linux, its
  architecture, its Python minor; ``contracts/markers.py``): dropped with a note, so two
  torch lines for x86_64 and for Darwin are one line for the Target;
- torch or a companion: replaced by the Target's exact build; a companion the Target's torch
  has no release of (torchaudio from torch 2.13) is refused here, before any resolving,
  naming the nearest torch that has one (and, for a pin, the torch that version was made for);
- any other requirement: passed through.
"""

from __future__ import annotations

import hashlib
import re
import shlex
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
from packaging.version import Version

from bundler.contracts import lockformat, markers
from bundler.errors import BundlerError, LockError, ProjectFileError
from bundler.lock.companions import made_for, torch_route
from bundler.target.bundle import Target
from bundler.target.table import PAIRED_COMPANIONS, CompatTable

# ----- reading: requirements.in and its includes ---------------------------------------------
REQUIREMENTS_IN = "requirements.in"
_INCLUDE = re.compile(r"^(-r|--requirement)(?:\s*=\s*|\s+|(?=[^\s-]))(\S+)$")


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
    """pip's logical lines (contracts/lockformat.py: continuations joined, comments dropped) of one file."""
    return [SourceLine(path, line.number, line.text) for line in lockformat.logical_lines(text)]


def include_target(line: SourceLine) -> str | None:
    """The file a ``-r`` line names, or None when the line is no include."""
    match = _INCLUDE.match(line.text)
    return match.group(2) if match else None


def read_lines(root: Path, name: str = REQUIREMENTS_IN) -> list[SourceLine]:
    """The lock's input (requirements.in, or the file bundle.toml's [build] requirements names) with
    every include expanded in place (ProjectFileError on a bad one)."""
    root = Path(root).resolve()
    first = root / name
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


def input_text(root: Path, name: str = REQUIREMENTS_IN) -> str | None:
    """What the lock's input hash covers: requirements.in, then each included file and each
    project wheel it names (their path and content). None without requirements.in.

    Lenient: a file it cannot follow is hashed as missing, so the lock reads as stale and
    `bundler lock` names the problem.
    """
    root = Path(root).resolve()
    first = root / name
    if not first.is_file():
        return None
    text = first.read_text(encoding="utf-8", errors="replace")
    extra = []
    try:
        lines = read_lines(root, name)
    except ProjectFileError as error:
        return text + f"\0unreadable include: {error.message}"
    for path in sorted({line.path for line in lines} - {first}):
        extra.append(f"\0include {path.relative_to(root)}\n{path.read_text(encoding='utf-8', errors='replace')}")
    extra += [f"\0wheel {name} {digest}" for name, digest in project_wheel_digests(root, lines)]
    return text + "".join(extra)


# ----- markers: for the Target ---------------------------------------------------------------
def target_environment(target) -> dict[str, str]:
    """PEP 508 marker variables of the Target's interpreter (patch level unknown: ``.0``)."""
    machine = target.platform.split("_", 1)[1] if "_" in target.platform else target.platform
    full = f"{target.python}.0"
    return {
        "implementation_name": "cpython",
        "implementation_version": full,
        "os_name": "posix",
        "platform_machine": machine,
        "platform_python_implementation": "CPython",
        "platform_release": "",
        "platform_system": "Linux",
        "platform_version": "",
        "python_full_version": full,
        "python_version": target.python,
        "sys_platform": "linux",
        "extra": "",
    }


def describe(target) -> str:
    return f"Linux {target_environment(target)['platform_machine']}, Python {target.python}"


def marker_holds(marker: str, target) -> bool:
    """Whether a requirement's marker holds on the Target (contracts/markers.py: the evaluator the diagnostics carry too)."""
    return markers.marker_holds(marker, target_environment(target))


# ----- option lines --------------------------------------------------------------------------
PYTORCH_INDEX = "https://download.pytorch.org/whl"
PASSED_THROUGH = ("--pre", "--prefer-binary", "--only-binary", "--no-binary")
INDEX_OPTIONS = ("-i", "--index-url", "--extra-index-url")
REFUSED = {
    "-f": "a --find-links page or folder is not an index a lock can record (and a folder is a host path)",
    "--find-links": "a --find-links page or folder is not an index a lock can record (and a folder is a host path)",
    "--trusted-host": "a trusted host turns off certificate checks for every download",
    "-c": "constraints files are not followed",
    "--constraint": "constraints files are not followed",
    "--no-index": "the Target's indexes are where locked files come from",
}


@dataclass
class OptionOutcome:
    lines: list[str] = field(default_factory=list)  # for the resolver's input
    extra_indexes: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def handle_option(root: Path, line: SourceLine, build, outcome: OptionOutcome) -> None:
    """Apply one option line to ``outcome`` (or raise, naming the line)."""
    option, value = lockformat.option_value(line.text)
    where = line.where(root)
    if option in PASSED_THROUGH:
        outcome.lines.append(line.text)
        return
    if option in INDEX_OPTIONS:
        _index_line(where, line, option, value, build, outcome)
        return
    reason = REFUSED.get(option, "bundler does not know what this option would change in a lock")
    raise ProjectFileError(
        f"{where}: {option} is not allowed in the lock's input ({line.text}): {reason}.",
        hint="Indexes come from the Target (bundle.toml) plus any `--extra-index-url https://…` line; list plain requirements, "
        "and put your own wheels in the project (`./wheels/NAME-VER-TAG.whl`).",
        path=line.path,
        value=line.text,
    )


def _index_line(where: str, line: SourceLine, option: str, value: str, build, outcome: OptionOutcome) -> None:
    url = value.rstrip("/")
    parts = urllib.parse.urlsplit(url)
    if url == PYTORCH_INDEX or url.startswith(PYTORCH_INDEX + "/"):
        wanted = build.index_url.rstrip("/")
        if url == wanted:
            outcome.notes.append(f"{where}: {line.text} is redundant: the Target's build already takes torch from {wanted}.")
            return
        raise LockError(
            f"{where}: {line.text!r} names PyTorch's index for another build than the Target's ({build.tag}, {wanted}).",
            hint="Remove the line: bundler takes torch and its companions from the Target's own index. To lock for that build, change "
            "the Target (`bundler lock --cuda VER`, `--rocm VER` or `--cpu`).",
            path=line.path,
            value=line.text,
        )
    if url == "https://pypi.org/simple":
        outcome.notes.append(f"{where}: {line.text} is redundant: PyPI is always an index of the lock.")
        return
    problem = None
    if parts.scheme != "https" or not parts.netloc:
        problem = "only https indexes can be recorded (a plain http or file index is unverified or a host path)"
    elif parts.username or parts.password:
        problem = "the URL carries credentials, which would be written into the lock"
    elif option != "--extra-index-url":
        problem = f"{option} would replace PyPI for every package"
    if problem:
        shown = line.text.replace(f"{parts.username or ''}:{parts.password}@", "***@") if parts.password else line.text
        shown = shown.replace(f"{parts.username}@", "***@") if parts.username and not parts.password else shown
        raise LockError(
            f"{where}: {shown!r} is refused: {problem}.",
            hint="Add another index with `--extra-index-url https://HOST/simple` (recorded in the lock; credentials come from pip's "
            "keyring or ~/.netrc, never the URL); a PyPI mirror goes in pip.conf or BUNDLER_INDEX_MAP.",
            path=line.path,
            value=shown,
        )
    if url not in outcome.extra_indexes:
        outcome.extra_indexes.append(url)
        outcome.notes.append(f"{where}: {url} is kept as an extra index, recorded in the lock (every file still needs its hash).")


# ----- direct references and project wheels --------------------------------------------------
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


class DirectReferenceError(LockError):
    """Lines of the requirements a hashed lock cannot pin: a VCS checkout, a URL, an editable, a local folder."""


_MISSING_WHEEL = "a local wheel outside the project or missing"
_PUT_THE_WHEEL = "Put the wheel in the project (e.g. wheels/) and name it by its relative path, e.g. `./wheels/NAME-VER-py3-none-any.whl`"


def refuse(root: Path, line: SourceLine) -> BundlerError:
    """The refusal of a direct reference: the line, what it is, and the routes that work."""
    kind, name = _kind_and_name(line.text)
    where = line.where(root)
    if kind == _MISSING_WHEEL:
        return ProjectFileError(
            f"{where}: {line.text} names a wheel that is not a file inside the project.",
            hint=_PUT_THE_WHEEL + ".",
            path=line.path,
            value=line.text,
        )
    return DirectReferenceError(
        f"{where}: {line.text!r} is {kind}, which a hashed lock cannot pin: the same line can give different code tomorrow, "
        "and the image builds offline.",
        hint=f"Either {_route(line, name)} and list `./wheels/<the file>.whl` in its place: "
        "bundler locks the wheel's sha256 and installs that file.",
        path=line.path,
        value=line.text,
    )


def refuse_all(root: Path, lines: list[SourceLine]) -> DirectReferenceError:
    """One refusal for several direct references, each line with what it is and its route."""
    kinds = [_kind_and_name(line.text) for line in lines]
    return DirectReferenceError(
        f"{len(lines)} lines of the requirements name code a hashed lock cannot pin (the same line can give different "
        "code tomorrow, and the image builds offline): "
        + "; ".join(f"{line.where(root)}: {line.text!r} is {kind}" for line, (kind, _) in zip(lines, kinds, strict=True))
        + ".",
        hint="For each: "
        + "; ".join(
            f"{line.where(root)}: {_PUT_THE_WHEEL if kind == _MISSING_WHEEL else _route(line, name)}"
            for line, (kind, name) in zip(lines, kinds, strict=True)
        )
        + ". List each wheel built so as `./wheels/<the file>.whl` in its line's place: bundler locks its sha256.",
        path=lines[0].path,
        value=lines[0].text,
    )


def _route(line: SourceLine, name: str) -> str:
    """What works instead of a direct reference: the release to pin (the newest PyPI lists), or a wheel built into the project."""
    release = latest_release(name) if name else None
    first = (
        f"pin the released version, `{name}=={release}` (the newest on PyPI)"
        if release
        else f"pin a released version (`{name}==X.Y`)"
        if name
        else "pin a released version (`NAME==X.Y`)"
    )
    source = line.text[3:].strip() if line.text.startswith("-e ") else line.text
    return f"{first}, or build a wheel into the project (`pip wheel --no-deps '{source}' -w wheels/`)"


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
        return _MISSING_WHEEL, ""
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


# ----- the resolver's input ------------------------------------------------------------------
_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
_PER_REQUIREMENT_OPTION = re.compile(r"\s--(hash|global-option|config-settings)[=\s]\S+")


@dataclass
class CompiledInput:
    lines: list[str] = field(default_factory=list)  # the resolver's requirements.in
    notes: list[str] = field(default_factory=list)
    direct: list[str] = field(default_factory=list)  # canonical names of the Target's direct dependencies
    extra_indexes: list[str] = field(default_factory=list)
    project_wheels: list[ProjectWheel] = field(default_factory=list)
    overrides: list[str] = field(default_factory=list)  # the project's pins of torch or a companion the Target's build replaces

    @property
    def find_links(self) -> list[str]:
        return sorted({str(wheel.path.parent) for wheel in self.project_wheels})


def line_name(line: str) -> str:
    match = _NAME.match(line)
    return canonicalize_name(match.group(1)) if match else ""


def _is_option(line: SourceLine) -> bool:
    """An option line of requirements.in (``--extra-index-url …``), not an editable install."""
    return line.text.startswith("-") and not line.text.startswith(("-e", "--editable"))


def compile_input(
    root: Path,
    companions: dict[str, str],
    target: Target,
    build,
    input_name: str = REQUIREMENTS_IN,
    table: CompatTable | None = None,
    skip_references: bool = False,
) -> CompiledInput:
    """requirements.in (with its includes) for the Target, or the first line that cannot be locked.
    ``skip_references``: leave the direct references out instead of refusing them (to read the rest's pins)."""
    root = Path(root).resolve()
    result, options = CompiledInput(), OptionOutcome()
    companion_lines: dict[str, SourceLine] = {}
    lines = [(line, _is_option(line), None if _is_option(line) else project_wheel(root, line)) for line in read_lines(root, input_name)]
    references = [line for line, option, wheel in lines if not option and wheel is None and is_direct_reference(line.text)]
    if references and not skip_references:  # every such line at once: a user mends them in one sitting
        raise refuse(root, references[0]) if len(references) == 1 else refuse_all(root, references)
    for line, option, wheel in lines:
        if line in references:
            continue
        if option:
            handle_option(root, line, build, options)
            continue
        if wheel is not None:
            result.project_wheels.append(wheel)
            result.lines.append(wheel.requirement)
            _add_direct(result, wheel.name)
            continue
        requirement = _parse(root, line)
        if requirement.marker is not None and not _holds(root, line, str(requirement.marker), target):
            result.notes.append(f"{line.where(root)}: {line.text} does not apply to the Target ({describe(target)}); skipped.")
            continue
        name = canonicalize_name(requirement.name)
        _add_direct(result, name)
        if name in PAIRED_COMPANIONS and name not in companions:
            raise _unreleased(root, line, requirement, name, target, table)
        if name not in companions:
            result.lines.append(line.text)
            continue
        if name in companion_lines:
            first = companion_lines[name]
            raise LockError(
                f"{line.where(root)}: {name} is listed twice for the Target ({describe(target)}): "
                f"{first.text!r} ({first.where(root)}) and {line.text!r}.",
                hint="Keep one line per package, or give the lines markers that exclude each other "
                '(e.g. `; platform_machine == "x86_64"` and `; sys_platform == "darwin"`).',
                path=line.path,
                value=line.text,
            )
        companion_lines[name] = line
        overridden: list[str] = []
        result.lines.append(_companion(root, line, requirement, name, companions[name], target, overridden, table))
        result.notes += overridden
        result.overrides += overridden
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


def _holds(root: Path, line: SourceLine, marker: str, target: Target) -> bool:
    try:
        return marker_holds(marker, target)
    except markers.MarkerError as error:
        raise ProjectFileError(
            f"{line.where(root)}: the marker of {line.text!r} cannot be evaluated ({error}).",
            hint='Compare a version variable with a version (`python_version >= "3.10"`) and any other with ==, !=, in or not in.',
            path=line.path,
            value=line.text,
        ) from None


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


def _unreleased(root: Path, line: SourceLine, requirement: Requirement, name: str, target: Target, table: CompatTable | None) -> LockError:
    """The refusal of a companion the Target's torch has no release of, with the nearest torch that has one."""
    nearest = table.nearest_with(name, target) if table is not None else None
    message = f"{line.where(root)}: {line.text!r} asks for {name}, and no {name} release exists for torch {target.torch} "
    message += "(the compatibility table pairs none with it)"
    pinned = _pinned_torch(requirement, name, table)
    if pinned:
        message += f"; {pinned}"
    if nearest is not None:
        paired = getattr(nearest, name)
        message += f". The nearest torch with {name}: {nearest.torch} ({name} {paired})."
        hint = torch_route(nearest.torch, name, line.path.name).rstrip(".") + " if the project does not need it (its code then must "
        hint += "not import it)."
    else:
        message += f". No torch in the table with the Target's build ({describe(target)}) pairs {name}."
        hint = f"Remove {name} from {line.path.name}, or choose another backend or torch with --cpu/--cuda and --torch."
    return LockError(message, hint=hint, path=line.path, value=line.text)


def _pinned_torch(requirement: Requirement, name: str, table: CompatTable | None) -> str:
    """For a pin of a companion (==X.Y.Z), which torch that version was made for ("" when unpinned or unknown)."""
    exact = [s.version for s in requirement.specifier if s.operator in ("==", "===") and "*" not in s.version]
    torch = table.torch_for(name, exact[0].split("+")[0]) if exact and table is not None else ""
    return made_for(name, exact[0], torch) if torch else ""


def _companion(
    root: Path,
    line: SourceLine,
    requirement: Requirement,
    name: str,
    wanted: str,
    target: Target,
    notes: list,
    table: CompatTable | None = None,
) -> str:
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
        pinned = _pinned_torch(requirement, name, table) if name != "torch" else ""
        notes.append(
            f"{line.where(root)} pins {line.text}"
            + (f" ({pinned})" if pinned else "")
            + f"; the Target's {name}=={wanted} is used instead (bundle.toml [target])."
        )
    return f"{name}=={wanted}"
