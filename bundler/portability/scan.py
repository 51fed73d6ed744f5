"""Find machine-specific paths in a project: user folders, home lookups, temp outputs.

The scan reads every file as bytes and runs the shapes (machinepaths.py) only on the
lines that hold one of a few cheap literal triggers. Each hit is then placed in its
file (context.py): documentation never fails, commands run on another machine and
portable per-user tool folders are information, and a path that names a file of this
project becomes a project-relative path rather than a parameter (classify.py).

What the scan could not look at is never reported clean: a text file over the size
limit, one it cannot read or decode, a notebook that is not valid JSON and a symlink
leading out of the project are listed as not checked (``ScanResult.not_checked``).
Binary files and generated or tool files (``--include-generated`` scans the latter)
are listed as skipped. A symlink's own target is a path too, and is scanned.
"""

from __future__ import annotations

import os
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path, PurePosixPath

from bundler.machinepaths import FORMAT_FIELD, PORTABLE_LOOKAHEAD, Hit, boundary_before, line_hits, path_named, shape_patterns, word_byte
from bundler.portability import context, homevars, rooted, shell
from bundler.portability.category import CONFIG_SUFFIXES, DOCS_DIRS, DOCS_SUFFIXES, LIST_SUFFIXES, category_of
from bundler.portability.classify import ENV_LOCAL, ParameterRegistry, classify, read_env_local, split_home
from bundler.portability.notebook import DATA, MARKDOWN, OUTPUT, SOURCE, NotebookLocator, cell_types
from bundler.portability.tails import TailParameters, keyword_call
from bundler.portability.walk import WalkEntry, generated_file, walk

MAX_FILE_BYTES = 10 * 1024 * 1024
# Text that is read a line at a time: a larger file is scanned in parts of MAX_FILE_BYTES.
LINE_ORIENTED_SUFFIXES = frozenset({".csv", ".tsv", ".log", ".txt", ".list", ".lst", ".flist", ".jsonl", ".ndjson"})
BINARY_SNIFF_BYTES = 8192

PYTHON_SUFFIXES = (".py", ".pyi", ".pyw")
YAML_SUFFIXES = (".yaml", ".yml")

# Every finding contains one of these triggers: a fast search in C; the shapes then run
# only on the lines that hold one. The slashes (_SLASH, _ABSOLUTE, the project's root) are
# searched in one pass.
_SLASH = re.compile(rb"/(?:home/|[Uu][Ss][Ee][Rr][Ss]/|root|tmp|var/|mnt/|private/|dev/shm|content/)")
# Any other absolute path: a slash and a letter after a space, a quote, "=", "(", ",", a glued
# flag or at a line's start, but the system's own folders (machinepaths' portable roots).
_ABSOLUTE = re.compile(  # the slash first: the regex engine searches for it fast
    rb"/(?:(?:(?<=[\s\"'`=(\[,:]/)|(?<=-[A-Za-z]/)|(?<=\A/)|(?<=\xe2\x80[\x98\x9c]/)|(?<=\\u201[8c]/)"
    + rb"|(?<=[\[;]\dm/)|(?<=[\[;]\d\dm/)|(?<=[\[;]\d\d\dm/))"  # a terminal colour code: "\u001b[0;32m/data/…"
    + PORTABLE_LOOKAHEAD
    + rb"[A-Za-z_][\w.+-]*(?:/|[\"'`;)|&]|\\[n\"]|[ \t]|\r?\n|\Z)"
    + rb"|(?<=[\"']/)(?=[\"']\s*,\s*[rRuU]?[\"'][A-Za-z_]))"  # join("/", "kaggle", …): the root, then its parts
)
_FORMAT_FIELD = re.compile(r"(?<!\$)" + FORMAT_FIELD.decode("ascii"))
_OTHER_TRIGGERS = (  # a one-byte literal first: found by memchr
    (b"~", re.compile(rb"~")),
    (b":", re.compile(rb":(?:\\|/|~)")),  # a drive (C:\\, C:/, C://) or host:path: checked in Python (_colon_hit)
    (b"$", re.compile(rb"\$(?:HOME|\{HOME\}|env:|USER_HOME\$)|\$\{?\w+\}?:[\w.-]")),  # "$REMOTE:repo/x": a host in a variable
    (b"%", re.compile(rb"%(?:USERPROFILE|HOMEPATH)%")),
    (b"@", re.compile(rb"@(?:[\w.-]+|\$\{?\w+\}?):")),
)
_CODE_TRIGGERS = (  # home lookups: only in code, never in prose or data files
    (b"HOME", re.compile(rb"HOME[\"']")),
    (b"USERPROFILE", re.compile(rb"USERPROFILE[\"']")),
    (b"home()", re.compile(rb"home\(\)")),
)  # expanduser("~…") needs no trigger of its own: its ~ is one
_NOT_CODE = CONFIG_SUFFIXES | DOCS_SUFFIXES | LIST_SUFFIXES | {".log"}  # a log is code, but holds no home lookups of its own
_WORD_BREAK = re.compile(rb"[\s\"'`(<\[=,]")
_TEXT_BYTES = bytes(range(0x20, 0x100)) + b"\t\n\r\x0c\x1b"
_BARE_STRING = re.compile(rb"""[rRuUbBfF]{0,2}(?:"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|""\".*|'''.*)\s*(?:#.*)?""")


@dataclass
class Finding:
    file: str
    line: int
    column: int
    text: str
    shape: str
    kind: str
    category: str  # code | config | notebook | docs (never fails) | remote | portable (information)
    replacement: str
    parameter: str | None = None
    value: str | None = None
    rest: str = ""
    project_relative: str | None = None
    prefix_length: int = 0  # how much of ``text`` the parameter (or the project root) stands for
    note: str = ""  # why --fix leaves it to a person (a ``~`` nothing expands, a folder built from a user name)

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass
class Skipped:
    file: str
    reason: str

    def as_dict(self) -> dict:
        return asdict(self)


INFORMATION = ("remote", "portable")


@dataclass
class ScanResult:
    root: Path
    findings: list[Finding] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    not_checked: list[Skipped] = field(default_factory=list)
    files_scanned: int = 0
    parameters: dict[str, str] = field(default_factory=dict)
    encodings: dict[str, str] = field(default_factory=dict)  # files read as something else than UTF-8
    omegaconf_dirs: list[str] = field(default_factory=list)  # config folders Hydra/OmegaConf loads

    @property
    def failing(self) -> list[Finding]:
        """Findings that keep the command failing: neither documentation nor information."""
        return [f for f in self.findings if f.category not in ("docs", *INFORMATION)]

    @property
    def information(self) -> list[Finding]:
        return [f for f in self.findings if f.category in INFORMATION]


def scan(project: Path | str | None = None, *, max_bytes: int = MAX_FILE_BYTES, include_generated: bool = False) -> ScanResult:
    """Scan every text file under ``project`` (default: the current folder)."""
    root = Path(project) if project is not None else Path.cwd()
    root_real = os.path.realpath(root)
    result = ScanResult(root=Path(root_real))
    roots = {os.fsencode(root_real), os.fsencode(os.path.abspath(root))}
    literals = [r for r in roots if r.count(b"/") >= 2]
    scanner = make_scanner(Path(root_real), literals, include_generated=include_generated)
    for entry in walk(root_real, include_generated):
        scanner.scan_entry(entry, result, max_bytes)
    result.findings += scanner.rooted_findings(result)
    _text_the_code_names(result, scanner.text_files_named)
    made = _in_home_folders_made(scanner.home_dot_folders + scanner.configured_folders_made())
    tails = _tails_dropped(result, scanner)
    if scanner.container_folders or scanner.image_files or made or tails:  # the project's own container layout
        result.findings = [
            f
            for f in result.findings
            if not _container_side(f, scanner.container_folders, scanner.container_homes) and not _in_image(f, scanner.image_files)
        ]
        used = {f.parameter for f in result.failing if f.parameter}
        result.parameters = {name: value for name, value in scanner.registry.assigned.items() if name in used}
    else:
        result.parameters = dict(scanner.registry.assigned)
    result.omegaconf_dirs = sorted(scanner.omegaconf_dirs)
    result.findings.sort(key=lambda f: (f.file, f.line, f.column))
    result.skipped.sort(key=lambda s: s.file)
    result.not_checked.sort(key=lambda s: s.file)
    return result


# Code that names a text file it reads or writes: that file is its input or its output, not prose.
_NAMING_CODE = frozenset({".py", ".ipynb", ".sh", ".bash", ".r", ".m", ".jl", ".lua", ".pl", ".js", ".ts", ".java", ".c", ".cpp"})
_TEXT_FILE_NAME = re.compile(rb"([\w.-]+\.txt)\b")


def _text_the_code_names(result: ScanResult, named: set[str]) -> None:
    """A ``.txt`` file the project's code names (``outputFile = outdir + '/' + 'sampleRepeatability.txt'``) is what the
    code reads or writes, so its paths are the code's, not documentation (docs/ and README files stay documentation)."""
    for finding in result.findings:
        path = PurePosixPath(finding.file)
        if finding.category != "docs" or path.suffix != ".txt" or path.name not in named:
            continue
        if not any(part.lower() in DOCS_DIRS for part in path.parts[:-1]) and not path.name.lower().startswith(_PROSE_NAMES):
            finding.category = "code"


_PROSE_NAMES = ("readme", "changelog", "license", "authors", "contributing", "notice", "copying", "install")
_CMD_SWITCH = re.compile(r"/[A-Za-z?]:?")
# A ROS package's files that name topics, frames and parameters with slashes: launch files, RViz layouts, parameters.
_ROS_FILES = (".launch", ".launch.xml", ".rviz", ".yaml", ".yml")
_CONTAINER_WORDS = (b"docker", b"podman")
# Python and notebooks a container runs are often run on the host too: their paths stay findings.
_RUN_ON_HOSTS_TOO = (*PYTHON_SUFFIXES, ".ipynb")
_CONTAINER_FILES = (".sh", ".bash", ".zsh", ".yml", ".yaml", ".dockerfile", ".containerfile", ".mk", ".md", ".rst")


def _declares_containers(relative: str) -> bool:
    """Files that bind, mount or build a container: shell scripts, compose and Kubernetes YAML, Dockerfiles, Makefiles,
    and a README that says how to run it (``docker run -v /nas/:/nas-data/ …``)."""
    name = relative.rsplit("/", 1)[-1]
    return name.lower().endswith(_CONTAINER_FILES) or name.startswith(("Dockerfile", "Containerfile", "Makefile", "makefile"))


_HOME_SHAPES = ("tilde", "home-var", "home-lookup")


def _dot_folders_in_home(data: bytes, found: list[Finding], shell: bool) -> list[tuple[Finding, str, bool]]:
    """(finding, the dot folder right in the home it names, whether its line creates it) for each such finding."""
    named = []
    for finding in found:
        if finding.shape in _HOME_SHAPES and finding.category not in ("docs", *INFORMATION):
            start, end = context.line_span(data, finding.line)
            line = data[start:end]
            _, components = split_home(finding.shape, finding.text)
            after = finding.column - 1 + len(finding.text)
            first = components[0] if components else context.component_after_lookup(line.decode("utf-8", "replace"), after)
            if first and first.startswith("."):
                expanded = finding.shape == "home-lookup" or b"expanduser(" in line or (shell and finding.shape == "home-var")
                target = homevars.assigned_name(line.decode("utf-8", "replace")) if expanded else None
                creates = context.makes_folder(line) or (target is not None and homevars.made_later(data, start + len(line), target))
                named.append((finding, first, creates))
    return named


def _config_dot_folders(data: bytes, found: list[Finding]) -> list[tuple[Finding, str, str]]:
    """(finding, dot folder, key) for a config value that is a whole dot folder in the home (``base_dir: ~/.x``)."""
    named = []
    for finding in found:
        if finding.shape == "tilde" and finding.category not in ("docs", *INFORMATION):
            _, components = split_home(finding.shape, finding.text)
            start, end = context.line_span(data, finding.line)
            key = homevars.config_key(data[start:end].decode("utf-8", "replace"))
            if key and len(components) == 1 and components[0].startswith("."):
                named.append((finding, components[0], key))
    return named


def _portable_through_variable(relative: str, data: bytes, found: list[Finding]) -> list[Finding]:
    """Information for each tool dot file reached through a variable that holds the home (``home = expanduser("~")``,
    then ``f"source {home}/.bashrc"``); the lookup itself stays a finding."""
    reached = []
    for finding in found:
        if finding.shape != "home-lookup" or finding.category in ("docs", *INFORMATION):
            continue
        start, end = context.line_span(data, finding.line)
        line = data[start:end].decode("utf-8", "replace")
        name = homevars.assigned_name(line)
        if name is None or line[finding.column - 1 + len(finding.text) :].strip() not in ("", ")"):
            continue  # only a variable that holds the home itself
        for use, use_end, dot in homevars.dot_uses(data, end, name):
            if context.portable_component(dot):
                line_number = data.count(b"\n", 0, use) + 1
                column = use - (data.rfind(b"\n", 0, use) + 1) + 1
                text = data[use:use_end].decode("utf-8", "replace")
                reached.append(Finding(relative, line_number, column, text, "home-lookup", "home-lookup", "portable", text))
    return reached


_ASSIGNED_LITERAL = re.compile(rb"""[ \t]*([A-Za-z_]\w*)[ \t]*=[ \t]*[rRuUfF]{0,2}(["'])([^"'\n]*)\2[ \t]*(?:#[^\n]*)?$""")
_STRING_METHODS = (
    rb"(?:replace|split|rsplit|partition|rpartition|endswith|startswith|removeprefix|removesuffix|strip|lstrip|rstrip|find|rfind"
    rb"|index|rindex|count)"
)
# cwd.replace(NAME, …): what is cut out (a replacement is a path); str(root) + NAME: a tail put after another folder
# (not ' ' + NAME nor '--model=' + NAME: a whole path put into a command)
_PIECE_BEFORE = re.compile(rb"\." + _STRING_METHODS + rb"\(\s*$|[^\s\"'+]\s*\+\s*$")
_PIECE_AFTER = re.compile(rb"\s+(?:not\s+)?in\s")  # NAME in cwd


def _without_string_pieces(data: bytes, found: list[Finding]) -> list[Finding]:
    """Leave out ``this_folder = '/user01'`` where every use of the name edits or tests another string
    (``cwd.replace(this_folder, '/src')``, ``this_folder in cwd``): a piece of a path, no folder of its own."""
    kept = []
    for finding in found:
        if finding.shape in ("absolute", "absolute-built") and finding.category not in ("docs", *INFORMATION):
            start, end = context.line_span(data, finding.line)
            assigned = _ASSIGNED_LITERAL.fullmatch(data, start, end)
            whole = assigned is not None and assigned.group(3).decode("utf-8", "replace").startswith(finding.text)
            if whole and assigned is not None and _only_string_pieces(data, assigned.group(1), start, end):
                continue
        kept.append(finding)
    return kept


def _only_string_pieces(data: bytes, name: bytes, start: int, end: int) -> bool:
    uses = [m for m in re.finditer(rb"(?<![\w.])" + re.escape(name) + rb"(?!\w)", data) if not start <= m.start() < end]
    for use in uses:
        line_start = data.rfind(b"\n", 0, use.start()) + 1
        if not (_PIECE_BEFORE.search(data, line_start, use.start()) or _PIECE_AFTER.match(data, use.end())):
            return False
    return bool(uses)


def _keyword_values(data: bytes, found: list[Finding]) -> list[tuple[Finding, str, str]]:
    """(finding, function, keyword) for each absolute path given as ``function(keyword="/x")``."""
    calls = []
    for finding in found:
        if finding.shape == "absolute" and finding.category not in ("docs", *INFORMATION):
            start, end = context.line_span(data, finding.line)
            line = data[start:end].decode("utf-8", "replace")
            at = start + len(line[: finding.column - 1].encode("utf-8"))
            call = keyword_call(data, start, at)
            if call is not None:
                calls.append((finding, *call))
    return calls


def _in_home_folders_made(named: list[tuple[Finding, str, bool]]) -> bool:
    """A dot folder in the home that the project's own code creates is portable, wherever it is named."""
    made = {first for _, first, creates in named if creates}
    for finding, first, _ in named:
        if first in made:
            finding.category = "portable"
    return bool(made)


def _tails_dropped(result: ScanResult, scanner: Scanner) -> bool:
    """Drop the values that the project's own function only appends to another (``f(subfolder="/data/")``)."""
    if not scanner.tail_candidates:
        return False
    parameters = TailParameters(scanner.python_files)
    tails = {id(f) for f, function, keyword in scanner.tail_candidates if parameters.is_tail(function, keyword)}
    result.findings = [f for f in result.findings if id(f) not in tails]
    return bool(tails)


_IMAGE_SHAPES = ("absolute", "home", "tilde", "home-var", "home-lookup", "temp-dir")  # the image's root, its user's home


def _in_image(finding: Finding, image_files: set[str]) -> bool:
    """A path in a script or config that runs inside the project's image (``COPY bashrc /home/ros/.bashrc``;
    ``docker run … img bash ./job.sh``) names the image's folders, as the recipe's own lines do."""
    return finding.file in image_files and finding.category in ("code", "config") and finding.shape in _IMAGE_SHAPES


def _container_side(finding: Finding, folders: set[str], homes: set[str]) -> bool:
    """A path under a folder the project's own container declares (``/tf/notebooks``; ``/home/jovyan/work`` bound or
    a WORKDIR), in code or a notebook that runs there, is the container's layout: an image's home is the same everywhere."""
    if finding.category not in ("code", "config", "notebook") or finding.shape not in ("absolute", "home"):
        return False
    return context.under_container_folder(finding.text, folders if finding.shape == "absolute" else homes)


def make_scanner(root: Path, literals: list[bytes] | None = None, *, include_generated: bool = False) -> Scanner:
    """A scanner for ``root`` (a resolved folder): its patterns, caches and parameter names."""
    if literals is None:
        literals = [os.fsencode(str(root))]
    return Scanner(root, literals, include_generated)


def decode(data: bytes) -> tuple[str, str]:
    """(text, encoding): UTF-8 when it decodes, else a legacy 8-bit text read as cp1252 (latin-1 where cp1252 has no character)."""
    try:
        return data.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        pass
    try:
        return data.decode("cp1252"), "cp1252"
    except UnicodeDecodeError:
        return data.decode("latin-1"), "latin-1"


def _in_url(data: bytes, at: int) -> bool:
    """Is ``at`` inside a ``scheme://…`` word? (Such a line needs no shape unless another trigger calls for it.)"""
    scheme = data.rfind(b"://", max(0, at - 256), at)
    return scheme != -1 and _WORD_BREAK.search(data, scheme, at) is None


def _letter(byte: int) -> bool:
    return 0x41 <= byte <= 0x5A or 0x61 <= byte <= 0x7A


_TRANSFER = re.compile(rb"\b(?:rsync|scp|sftp|rclone)\b")


def _colon_hit(data: bytes, at: int) -> bool:
    """A drive (one letter before the colon) or ``host:path`` on a copying command's line."""
    if not at or not word_byte(data[at - 1]):
        return False
    if _letter(data[at - 1]) and (at < 2 or not word_byte(data[at - 2]) or boundary_before(data, at - 1)) and data[at + 1 : at + 2] != b"~":
        return True
    line_start = data.rfind(b"\n", 0, at) + 1
    line_end = data.find(b"\n", at)
    return _TRANSFER.search(data, line_start, len(data) if line_end == -1 else line_end) is not None


_HYDRA_CONFIG_PATH = re.compile(rb"""(?:hydra\.main|initialize)\([^)]*config_path\s*=\s*["']([^"']+)["']""")


class Scanner:
    def __init__(self, root: Path, root_literals: list[bytes], include_generated: bool = False) -> None:
        self.root = root
        self.include_generated = include_generated
        self.patterns = shape_patterns(root_literals, general=True)
        roots = b"".join(b"|" + re.escape(r[1:]) for r in root_literals if r.startswith(b"/"))
        self.slash = re.compile(_SLASH.pattern[:-1] + roots + b"|" + _ABSOLUTE.pattern[1:] + b")")  # one pass over the slashes
        self.registry = ParameterRegistry(read_env_local(root / ENV_LOCAL))
        self.omegaconf_dirs: set[str] = set()
        self.container_folders: set[str] = set()  # the container sides the project declares (binds, mounts, WORKDIR)
        self._ros_cache: dict[str, bool] = {}
        self.image_files: set[str] = set()  # files that run in the project's image (copied in by a recipe, a container's command)
        self.container_homes: set[str] = set()  # those of them in a home: binds and WORKDIR only
        self.home_dot_folders: list[tuple[Finding, str, bool]] = []  # dot folders in a home: named, created there
        self.python_files: list[str] = []  # where a function's definition is looked up (tails.py)
        self.text_files_named: set[str] = set()  # the .txt names the code reads or writes (``open('scores.txt', 'w')``)
        self.tail_candidates: list[tuple[Finding, str, str]] = []  # (finding, function, keyword) of f(keyword="/x")
        self._exists_cache: dict[str, bool] = {}
        self.rooted: list[tuple[rooted.Assignment, bytes]] = []  # NAME = "/folder" statements, with their file's text
        self.path_heads: set[str] = set()  # the names Python code builds paths on
        self.config_dot_folders: list[tuple[Finding, str, str]] = []  # (finding, dot folder, the config key holding it)
        self.expanded_and_made: set[str] = set()  # names Python code expands as a home path and makes folders with

    # --- one entry of the walk ---------------------------------------------------------

    def scan_entry(self, entry: WalkEntry, result: ScanResult, max_bytes: int) -> None:
        if entry.skipped is not None:
            result.skipped.append(Skipped(entry.relative, entry.skipped))
        if entry.not_checked is not None:
            result.not_checked.append(Skipped(entry.relative, entry.not_checked))
        if entry.link_target is not None:
            self.scan_link(entry.relative, entry.link_target, result)
        if entry.path is not None:
            self.scan_file(entry.relative, entry.path, entry.size, result, max_bytes)

    def scan_link(self, relative: str, target: str, result: ScanResult) -> None:
        """A symlink's target names a folder on one machine when it has a machine-specific shape."""
        data = os.fsencode(target)
        category = "docs" if category_of(relative) == "docs" else "config"  # a link in docs/ or logs/ is documentation
        for finding in self.findings_in(relative, data, category, [0]):
            if finding.shape == "temp-dir":
                continue  # a link into a temporary folder keeps no output there
            finding.kind = "symlink-target"
            result.findings.append(finding)

    def scan_file(self, relative: str, path: str, size: int, result: ScanResult, max_bytes: int) -> None:
        try:
            with open(path, "rb") as handle:
                head = handle.read(BINARY_SNIFF_BYTES)
                if head.startswith((b"\xff\xfe", b"\xfe\xff")):
                    result.not_checked.append(Skipped(relative, "UTF-16 text: save it as UTF-8 to have it checked"))
                    return
                unpadded = head.rstrip(b"\0")  # a text file with a few NULs at its end only (an editor's padding) is text
                padded = len(head) == size and bool(unpadded) and b"\0" not in unpadded and len(head) - len(unpadded) <= 64
                if (b"\0" in head and not padded) or len(head.translate(None, _TEXT_BYTES)) > len(head) // 20:
                    result.skipped.append(Skipped(relative, "binary file"))
                    return
                if not self.include_generated and generated_file(head, relative):
                    result.skipped.append(Skipped(relative, "generated file (scanned with --include-generated)"))
                    return
                if size > max_bytes:
                    if os.path.splitext(relative)[1].lower() in LINE_ORIENTED_SUFFIXES:
                        self.scan_in_parts(relative, handle, head, result, max_bytes)
                        return
                    why = "only line-oriented text (csv, tsv, log, txt, file lists, jsonl) is read in parts"
                    result.not_checked.append(Skipped(relative, f"too large ({size} bytes > limit of {max_bytes}; {why})"))
                    return
                data = head + handle.read()
        except OSError as error:
            result.not_checked.append(Skipped(relative, f"cannot be read: {error.strerror or error}"))
            return
        result.files_scanned += 1
        if data.startswith(HELPER_MARKER):
            return  # the helper --fix writes: it looks the home up on purpose
        if relative.endswith(PYTHON_SUFFIXES):
            self.python_files.append(path)
            self.expanded_and_made |= homevars.expanded_and_made(data)
        if relative.endswith((*PYTHON_SUFFIXES, ".ipynb")):  # a notebook's code cells build paths as a module does
            self.path_heads |= rooted.path_heads(data)
            self.rooted += [(a, data) for a in rooted.assignments(relative, data) + rooted.drive_roots(relative, data)]
        if relative.endswith(PYTHON_SUFFIXES) and (b"omegaconf" in data or b"hydra" in data):
            for match in _HYDRA_CONFIG_PATH.finditer(data):
                folder = os.path.normpath(os.path.join(os.path.dirname(relative), match.group(1).decode("utf-8", "replace")))
                self.omegaconf_dirs.add(folder)
        types = None
        if relative.endswith(".ipynb"):
            types = cell_types(data)
            if types is None:
                result.not_checked.append(Skipped(relative, "malformed notebook (not valid JSON with a list of cells)"))
                return
        self.note_image_files(relative, data)
        lines = self.candidate_lines(data, code=os.path.splitext(relative)[1].lower() not in _NOT_CODE)
        if _declares_containers(relative) and (lines or _BUILD_FILE.match(os.path.basename(relative))):
            # a bind's container side is an absolute path, so only files with a trigger; a Dockerfile's base image too
            self.container_folders |= context.container_folders(data)
            self.container_homes |= {f for f in context.container_folders(data, context.BIND_SIDES) if f.startswith(("/home/", "/root/"))}
            if _BUILD_FILE.match(os.path.basename(relative)):
                self.container_homes |= context.image_user_homes(data)
        if b".txt" in data and os.path.splitext(relative)[1].lower() in _NAMING_CODE:
            self.text_files_named.update(name.decode("utf-8", "replace") for name in _TEXT_FILE_NAME.findall(data))
        if not lines:
            return
        if not data.isascii():
            encoding = decode(data)[1]
            if encoding != "utf-8":
                result.encodings[relative] = encoding
        category = category_of(relative, data)
        found = self.findings_in(relative, data, category, lines, types)
        if relative.endswith(PYTHON_SUFFIXES):
            found = _without_string_pieces(data, found)
            self.tail_candidates += _keyword_values(data, found)
        if any(f.shape in _HOME_SHAPES for f in found):
            script = shell.interpreter(relative, data[:200].decode("utf-8", "replace")) is not None
            self.home_dot_folders += _dot_folders_in_home(data, found, script)
            if category == "config":
                self.config_dot_folders += _config_dot_folders(data, found)
            if relative.endswith(PYTHON_SUFFIXES):
                found += _portable_through_variable(relative, data, found)
        if b"scp" in data or b"rsync" in data or b"ssh" in data:
            context.mark_remote_variables(data, found)
        if any(f.shape == "tilde" and not f.note and f.category not in ("docs", *INFORMATION) for f in found):
            _note_quoted_tildes(relative, decode(data)[0], found)
        result.findings.extend(found)

    def scan_in_parts(self, relative: str, handle, pending: bytes, result: ScanResult, part_bytes: int) -> None:
        """A line-oriented text larger than ``part_bytes``, read a part of whole lines at a time: memory
        stays bounded by the part, and each finding keeps its line number in the whole file. A part
        holding a NUL byte is no text: the file is then not checked (its findings would be half of them)."""
        category, lines_before, found = category_of(relative, pending), 0, []
        size = os.fstat(handle.fileno()).st_size
        while True:
            block = handle.read(part_bytes)
            data = pending + block
            if b"\0" in block:
                line = lines_before + data.count(b"\n", 0, data.index(b"\0"))
                why = f"too large ({size} bytes > limit of {part_bytes}) and not text after line {line} (a NUL byte)"
                result.not_checked.append(Skipped(relative, f"{why}: check it by hand"))
                return
            cut = data.rfind(b"\n") + 1 if block else len(data)
            if block and cut == 0:
                result.not_checked.append(Skipped(relative, f"a line longer than {part_bytes} bytes after line {lines_before}"))
                return
            part, pending = data[:cut], data[cut:]
            lines = self.candidate_lines(part, code=False)
            for finding in self.findings_in(relative, part, category, lines) if lines else ():
                finding.line += lines_before
                found.append(finding)
            lines_before += part.count(b"\n")
            if not block:
                break
        result.files_scanned += 1
        result.findings.extend(found)

    def candidate_lines(self, data: bytes, code: bool = True) -> list[int]:
        """Start offsets of the lines holding a trigger (empty: the file cannot hold a finding)."""
        hits = [m.start() for m in self.slash.finditer(data) if not _in_url(data, m.start())]
        for literal, trigger in _OTHER_TRIGGERS + (_CODE_TRIGGERS if code else ()):
            if literal in data:
                found = [m.start() for m in trigger.finditer(data)]
                if literal == b":":
                    found = [i for i in found if _colon_hit(data, i)]
                hits += found
        return sorted({data.rfind(b"\n", 0, hit) + 1 for hit in hits})

    # --- the findings of one text ------------------------------------------------------

    def findings_in(
        self, relative: str, data: bytes, category: str, lines: list[int] | None = None, types=None, *, decoded: bool = False
    ) -> list[Finding]:
        """Every finding in ``data`` (the text of ``relative``, or a string decoded from it), parameters named by the registry."""
        if lines is None:
            lines = self.candidate_lines(data)
        text, _ = decode(data) if not data.isascii() else (None, "ascii")
        place = _Place(relative, data, category, types)
        place.json = place.json and not decoded
        place.ros = relative.endswith(_ROS_FILES) and self._in_ros_package(relative)
        found = []
        line_number, counted_to = 1, 0
        for line_start in lines:
            line_number += data.count(b"\n", counted_to, line_start)
            counted_to = line_start
            line_end = data.find(b"\n", line_start)
            line_end = len(data) if line_end == -1 else line_end
            for hit in line_hits(self.patterns, data, line_start, line_end):
                finding = self._finding(place, hit, line_start, line_end, line_number, text)
                if finding is not None:
                    found.append(finding)
        # the topic a comment names (`# subscribe to /camera/points`) is the one the file subscribes to, not a folder
        return [f for f in found if f.shape != "absolute" or f.text not in place.namespaced]

    def _finding(self, place: _Place, hit, line_start: int, line_end: int, line: int, text: str | None) -> Finding | None:
        data, shape = place.data, hit.shape
        kind, category = shape, place.category
        if place.own.holds(hit.start):
            return None  # the block --fix wrote into a script reads the home on purpose
        if place.notebook is not None:
            kind = place.notebook.kind_at(hit.start)
            if kind == DATA:
                return None
            if kind == MARKDOWN or (kind == SOURCE and place.notebook.in_bare_string(hit.start)):
                category = "docs"
        if shape == "tilde" and context.system_home_tilde(hit.text):
            return None
        if shape == "temp-dir" and not context.temp_is_output(data, line_start, hit.start, hit.text):
            return None
        if hit.group == "windows" and not _windows_path(hit.text, place.json, path_named(data, line_start, hit.start)):
            return None
        if hit.group in ("home", "project", "temp", "absolute") and context.is_web_path(data, line_start, hit.start):
            return None
        if hit.group in ("home", "temp", "absolute") and context.markup_or_regex(data, hit.start):
            return None
        if hit.group in ("home", "temp", "absolute") and context.namespace_name(data, line_start, hit.start):
            place.namespaced.add(hit.text)
            return None  # prim_path="/World/ground", Subscriber("/camera/image"): no folder
        if hit.group not in ("remote", "lookup", "homevar") and context.regex_string(data, line_start, line_end, hit.start):
            return None  # 'D:\\Imaging\\([^\\]+)': a pattern that matches paths, no folder
        if hit.group == "absolute" and context.named_by_variables(data, line_start, hit.text):
            return None  # # write to /idx_sample/idx_sub/params: the names of the code's variables, no folder
        if hit.group == "absolute" and context.tex_wrapped_system_path(data, line_start, hit.start, hit.end):
            return None  # a TeX log's ``…></usr`` wrapped at 79 characters, then ``/share/texlive/…``: the system's
        if hit.group == "absolute" and place.relative.endswith(".m") and context.matlab_concatenated(data, line_start, hit.start):
            return None  # [root '/RGB/']: MATLAB joins the piece to a folder
        if hit.group == "absolute" and context.path_piece(data, line_start, hit.start):
            return None  # .replace("/speech_data/", "/speech_data_16k/"), # root + /ImageSets/val.txt: a piece of a path
        if hit.group == "absolute" and place.batch and _CMD_SWITCH.fullmatch(hit.text):
            return None  # cd /d "%~dp0", cmd /k: a switch of Windows' command interpreter
        if hit.group == "absolute" and place.ros and context.ros_graph_name(hit.text):
            return None  # <remap to="/camera/rgb/image_raw"/> in a ROS package: a topic, no folder
        if hit.group in ("home", "temp", "absolute") and context.in_base64(data, hit.start):
            return None  # an inlined image or video, not a folder
        if hit.group in ("home", "temp", "absolute") and context.in_container(data, line_start, hit.start):
            return None  # docker exec NAME /scripts/x.sh: the container's own layout
        if hit.group in ("home", "temp", "absolute") and kind == OUTPUT and place.recipes and context.image_recipe_output(data, hit.start):
            return None  # !cat Dockerfile, docker build's Step 4/9 : RUN …: the image's layout
        if hit.group == "absolute" and place.image:
            return None  # a Dockerfile's paths are the image's own layout; .gitignore's are the repository's
        if hit.group == "absolute" and place.packaging and self._exists(os.path.join(os.path.dirname(place.relative), hit.text[1:])):
            return None  # a packaging table's include = ["/src/pkg"]: a pattern rooted at the project, naming its own folder
        if place.build_file and not context.build_source(data, line_start, line_end, hit.start):
            return None  # every path of a Dockerfile or an Apptainer .def but a COPY/ADD source is the image's
        if data[hit.start - 1 : hit.start] == b":" and context.bind_container_side(data, line_start, hit.start, place.yaml):
            return None  # - ./data:/home/jovyan/work, -v x:/root/y: the container's side of a bind
        end = context.extend_past_spaces(data, line_start, line_end, hit.start, hit.end, place.yaml)
        backslashed = hit.group == "windows" or (hit.group == "tilde" and hit.text[1:2] == "\\")
        if place.json and backslashed:  # in JSON text a single backslash starts an escape, never a folder
            escape = re.search(rb"(?<!\\)(?:\\\\)*\\(?!\\)", data[hit.start : end])
            end = hit.start + escape.start() + len(escape.group(0)) - 1 if escape else end
        raw = data[hit.start : end]
        found = raw.decode("utf-8", errors="replace") if text is None or raw.isascii() else decode(raw)[0]
        found = found.rstrip(".") if shape != "home-lookup" else found
        if category != "docs" and place.is_docs(hit.start):
            category = "docs"
        printed_history = (kind == OUTPUT and context.in_provenance(data, line_start, hit.start)) or context.data_file_header(
            data, line_start
        )
        if shape == "remote" or printed_history or context.is_remote(data, line_start, hit.start) or place.remote.holds(hit.start):
            category = "remote"
        elif place.ci and category != "docs" and not self._portable(shape, found, data, end):
            category = "remote"  # a CI service's config: the folders of its runner, another machine
        elif category != "docs" and self._portable(shape, found, data, end):
            category = "portable"
        target = classify(self.root, shape, found, self._exists)
        note = _BY_HAND.get(shape, "")
        if shape == "temp-dir" and found.endswith("/") and context.placeholder_tree(data, end) is not None:
            note = _BY_HAND["absolute-built"]  # /tmp/{user}/…: the folder is built at run time
        elif shape in ("home", "absolute") and _FORMAT_FIELD.search(found):
            note = _BY_HAND["absolute-built"]  # f"/checkpoint/{user}/x", "/home/{}/x".format(u): built at run time
        if shape == "tilde" and (place.python or place.notebook is not None) and category not in ("docs", "remote", "portable"):
            note = UNEXPANDED_TILDE  # Python never expands ~ by itself; expanduser("~/…") is the home-lookup shape
        if shape.startswith("windows") and _CUT_AT_SPACE.match(data, end, line_end):
            note = CUT_AT_SPACE  # C:\\Users\\Max Johansson\\x unquoted: a rewrite of "C:\\Users\\Max" would change the path
        if target.parameter is not None and not note and _under_project_folder(found, self.root.name):
            note = UNDER_PROJECT_FOLDER
        if target.parameter is not None and category not in ("docs", "remote", "portable") and not note:
            target = self.registry.name(target)
        prefix = data[line_start : hit.start]
        column = len(prefix.decode("utf-8", errors="replace") if text is None or prefix.isascii() else decode(prefix)[0]) + 1
        return Finding(
            file=place.relative,
            line=line,
            column=column,
            text=found,
            shape=shape,
            kind=kind,
            category=category,
            replacement=target.replacement,
            parameter=target.parameter,
            value=target.value,
            rest=target.rest,
            project_relative=target.relative,
            prefix_length=target.prefix_length,
            note=note,
        )

    @staticmethod
    def _portable(shape: str, found: str, data: bytes, end: int) -> bool:
        if shape not in ("tilde", "home-var", "home-lookup"):
            return False
        _, components = split_home(shape, found)
        if components:
            return context.portable_component(*(components + [None, None])[:3])
        if found in ("$HOME", "${HOME}") and data[end : end + 1] in (b" ", b"\t") and data[end - len(found) - 1 : end - len(found)] != b"=":
            return True  # the home itself, named or handed to a command (cd $HOME && …): every machine has one
        if shape == "home-lookup" or found in ("~", "~/", "$HOME", "${HOME}"):
            after = data[end : data.find(b"\n", end) if b"\n" in data[end:] else len(data)]
            return context.portable_component(context.component_after_lookup(after.decode("utf-8", "replace"), 0))
        return False

    def configured_folders_made(self) -> list[tuple[Finding, str, bool]]:
        """The dot folders config values name whose key the project's Python code expands and makes folders with."""
        return [(finding, first, True) for finding, first, key in self.config_dot_folders if key in self.expanded_and_made]

    def rooted_findings(self, result: ScanResult) -> list[Finding]:
        """A folder right under / kept in a variable (``FS = "/checkpoint"``) that code builds paths on is one machine's."""
        known = {(f.file, f.line) for f in result.findings}
        found = []
        for assignment, data in self.rooted:
            if assignment.group == "absolute" and assignment.name not in self.path_heads:
                continue
            line_start = data.rfind(b"\n", 0, assignment.start) + 1
            line_end = data.find(b"\n", assignment.start)
            line = data.count(b"\n", 0, assignment.start) + 1
            if (assignment.relative, line) in known:
                continue
            text = data[assignment.start : assignment.end].decode("utf-8", "replace")
            place = _Place(assignment.relative, data, category_of(assignment.relative, data), None)
            hit = Hit(assignment.group, assignment.start, assignment.end, text)
            finding = self._finding(place, hit, line_start, len(data) if line_end == -1 else line_end, line, None)
            if finding is not None:
                found.append(finding)
        return found

    def note_image_files(self, relative: str, data: bytes) -> None:
        """Remember the project's files that run inside its image: what a recipe copies in, what a container runs."""
        named: list[str] = []
        if _BUILD_FILE.match(os.path.basename(relative)) or _APPTAINER_RECIPE.match(data):
            named = context.image_sources(data)
        elif _declares_containers(relative) and any(word in data for word in _CONTAINER_WORDS):
            named = context.container_scripts(data)
        for name in named:
            for candidate in {os.path.normpath(os.path.join(os.path.dirname(relative), name)), os.path.normpath(name)}:
                inside = not candidate.startswith("..") and not os.path.isabs(candidate)
                if inside and not candidate.endswith(_RUN_ON_HOSTS_TOO) and os.path.isfile(self.root / candidate):
                    self.image_files.add(candidate)

    def _in_ros_package(self, relative: str) -> bool:
        """Is ``relative`` inside a ROS package: a folder above it (or its own) holds a ``package.xml``?"""
        folder = os.path.dirname(relative)
        while True:
            if folder not in self._ros_cache:
                self._ros_cache[folder] = os.path.isfile(self.root / folder / "package.xml")
            if self._ros_cache[folder] or not folder:
                return self._ros_cache[folder]
            folder = os.path.dirname(folder)

    def _exists(self, relative: str) -> bool:
        if relative not in self._exists_cache:
            self._exists_cache[relative] = os.path.lexists(self.root / relative)
        return self._exists_cache[relative]


UNEXPANDED_TILDE = "nothing here expands ~ (no expanduser around it): in Python it is a folder named ~, not the home; change it by hand"
_BY_HAND = {
    "home-built": "a home folder built from a user name: make the whole folder a parameter by hand",
    "absolute-built": "a folder built from parts at run time: make it a parameter by hand",
}

QUOTED_TILDE = "quoted, so the shell does not expand ~ here: it is no home; change it by hand"
# A Windows path that a space stops, where the word after the space goes on with a separator: the
# name has a space and nothing here marks where the path ends (no quote right around it).
_CUT_AT_SPACE = re.compile(rb" [^\s\"'`\\/]+(?:\\|/)")
CUT_AT_SPACE = "a folder name with a space, and no quote right around the path marks where it ends: make it a parameter by hand"
UNDER_PROJECT_FOLDER = (
    "under a folder named as this project, so likely the project's own place on that machine (a git-ignored"
    " folder, outputs): a parameter would not follow the project when it moves; write it relative to the project by hand"
)
_SEPARATORS = re.compile(r"[\\/]+")


def _under_project_folder(found: str, project: str) -> bool:
    """Does the path pass through a folder named as the project, with more below it (``…/proj/out``)?"""
    parts = [p.lower() for p in _SEPARATORS.split(found)]
    return len(project) >= 3 and project.lower() in parts[:-1]


def _note_quoted_tildes(relative: str, text: str, found: list[Finding]) -> None:
    """A ``~`` in quotes or a heredoc is not expanded by the shell: say so, and let --fix leave it."""
    if shell.interpreter(relative, text) is None:
        return
    kinds, offsets = shell.contexts(text), [0] + [m.end() for m in re.finditer("\n", text)]
    for finding in found:
        if finding.shape == "tilde" and finding.category not in ("docs", *INFORMATION):
            at = offsets[finding.line - 1] + finding.column - 1
            if at < len(kinds) and kinds[at] not in (shell.CODE, shell.COMMENT):
                finding.note = QUOTED_TILDE


_TEXT_ESCAPE = re.compile(r"[A-Za-z]:\\[ntr]")


def _windows_path(text: str, json: bool, named: bool) -> bool:
    """``f:\n`` in JSON text (or a text's escape after a one-letter name: ``"Total:\n"``) is not a Windows path.

    The source text is read, not the value: ``"output_dir": "E:\a"`` is the folder ``E:\a`` its author
    wrote, whatever Python's ``\a`` decodes to; a value named as a folder is a path even after ``\n``.
    """
    if _TEXT_ESCAPE.fullmatch(text.rstrip("\\").replace("\\\\", "\\") if json else text) and not named:
        return False  # in a notebook's JSON, "X:\\n" is the cell's "X:\n"
    if _REGEX_AFTER_DRIVE.match(text):
        return False  # sed's s:\-.*$:: or a pattern's \. : an escaped metacharacter, never a folder's name
    return not (json and text[2] == "\\" and text[3:4] != "\\")


_REGEX_AFTER_DRIVE = re.compile(r"[A-Za-z]:\\+[-.*^$\[(+?|{]")


# Files whose absolute paths are not this machine's: an image's own layout, ignore patterns
# rooted at the repository (``/build`` in .gitignore).
_IMAGE_FILE = re.compile(
    r"(?i)^(?:dockerfile|containerfile)(?:[._-].*)?$|.*\.dockerfile$|^(?:docker-)?compose.*\.ya?ml$|^\.\w*ignore$|^\.gitattributes$"
)
# An Apptainer/Singularity recipe, whatever its name (``Singularity``, ``Singularity.gpu``, ``x.def``): its header.
_APPTAINER_RECIPE = re.compile(rb"(?:\s*#[^\n]*\n)*\s*[Bb]ootstrap:[ \t]*\w")
# Packaging configs whose include/exclude patterns are rooted at the file's folder (hatch's "/src/pkg", poetry's)
_PACKAGING_FILES = frozenset({"pyproject.toml", "hatch.toml", "setup.cfg", "MANIFEST.in"})
_BUILD_FILE = re.compile(r"(?i)^(?:dockerfile|containerfile)(?:[._-].*)?$|.*\.(?:dockerfile|containerfile)$")
# A CI service's config, where the service reads it (the repository's root): its paths are the runner's. A copy
# elsewhere (a vendored library's .travis.yml) runs on no runner of this project.
_CI_CONFIG = re.compile(
    r"^(?:\.circleci/config\.ya?ml|\.travis\.ya?ml|\.gitlab-ci\.ya?ml|\.github/workflows/[^/]+\.ya?ml|\.?appveyor\.ya?ml"
    r"|azure-pipelines\.ya?ml|bitbucket-pipelines\.ya?ml|\.drone\.ya?ml|\.buildkite/[^/]+\.ya?ml|Jenkinsfile)$"
)
HELPER_MARKER = b'"""Machine-specific paths of this project (written by `bundler paths --fix`'
_OWN_BLOCK = re.compile(
    rb"^# --- path parameters \(written by `bundler paths --fix`\) ---$.*?^# --- end of path parameters ---$", re.M | re.S
)


class _Place:
    """What the scan knows of one file: its category, docstrings, notebook parts, remote blocks."""

    def __init__(self, relative: str, data: bytes, category: str, types) -> None:
        self.relative, self.data, self.category = relative, data, category
        self.yaml = relative.endswith(YAML_SUFFIXES)
        self.python = relative.endswith(PYTHON_SUFFIXES)
        self.json = relative.endswith((".json", ".ipynb"))
        self.batch = relative.lower().endswith((".bat", ".cmd"))
        name = os.path.basename(relative)
        self.build_file = _BUILD_FILE.match(name) is not None or _APPTAINER_RECIPE.match(data) is not None
        self.image = self.build_file or _IMAGE_FILE.match(name) is not None
        self.ci = _CI_CONFIG.match(relative) is not None
        self.packaging = name in _PACKAGING_FILES
        self.recipes = category == "notebook" and b"FROM " in data  # a printed Dockerfile or build has a FROM line
        self.notebook = NotebookLocator(data, types) if category == "notebook" else None
        self.remote = context.remote_lines(data) if b"ssh" in data else context.Spans([])
        own = _OWN_BLOCK.search(data) if b"--- path parameters (written by" in data else None
        self.own = context.Spans([own.span()] if own else [])
        self._docstrings: context.Spans | None = None
        self.ros = False
        self.namespaced: set[str] = set()  # texts this file hands to a namespace's call (a ROS topic), no folders anywhere in it

    def is_docs(self, offset: int) -> bool:
        if not self.relative.endswith(PYTHON_SUFFIXES):
            return False
        start = self.data.rfind(b"\n", 0, offset) + 1
        end = self.data.find(b"\n", offset)
        line = self.data[start : len(self.data) if end == -1 else end].strip()
        open_triple = self.data.count(b'"""', 0, offset) % 2 or self.data.count(b"'''", 0, offset) % 2
        if not open_triple and not _BARE_STRING.fullmatch(line):
            return False  # neither inside a triple-quoted string nor a line that is one string: code
        if self._docstrings is None:
            text = self.data.decode("utf-8", errors="replace")
            spans = context.python_docstring_spans(text)
            if not self.data.isascii():  # character offsets to byte offsets
                spans = [(len(text[:s].encode("utf-8")), len(text[:e].encode("utf-8"))) for s, e in spans]
            self._docstrings = context.Spans(spans)
        return self._docstrings.holds(offset)
