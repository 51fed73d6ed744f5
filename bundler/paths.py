"""Find machine-specific paths in a project: home folders, user folders, temp outputs.

The scan reads every file as bytes, drops binary, oversized and undecodable files
(listing them as skipped), and runs one combined regular expression only over files
that contain one of a few cheap literal tokens. A hit is then classified in Python:
URLs are dropped, temporary folders count only when the line writes an output, and a
path that names a file of this project (on this machine or, by its tail, on another
one) becomes a project-relative path rather than a parameter.

Shapes (``Finding.shape``): home (``/home/u``, ``/Users/u``, ``/root``), tilde
(``~/…``), home-var (``$HOME``, ``${HOME}``, ``%USERPROFILE%``), home-lookup
(``expanduser("~…")``, ``Path.home()``), windows-user (``C:\\Users\\u`` in every
spelling), wsl-user (``/mnt/c/Users/u``), temp-dir (``/tmp/…`` written to) and
project-absolute (an absolute path inside this project). Notebook findings carry the
part of the notebook they sit in as their kind: notebook-source, notebook-output or
notebook-metadata; other findings have ``kind == shape``.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path, PurePosixPath

MAX_FILE_BYTES = 10 * 1024 * 1024
BINARY_SNIFF_BYTES = 8192

# Folders never scanned: tools' own state, environments, and bundler's backups.
SKIP_DIRS = frozenset(
    {".git", ".hg", ".svn", "__pycache__", ".venv", "venv", ".tox", ".nox", "node_modules",
     ".mypy_cache", ".pytest_cache", ".ruff_cache", ".ipynb_checkpoints", ".bundler"}
)
# .env.local holds the original machine-specific values on purpose (see pathfix.py).
SKIP_FILES = frozenset({".env.local"})

CONFIG_SUFFIXES = frozenset({".json", ".yaml", ".yml", ".toml", ".ini", ".cfg", ".conf", ".env", ".properties"})
DOCS_SUFFIXES = frozenset({".md", ".markdown", ".rst", ".txt", ".adoc", ".log", ".html", ".htm"})
DOCS_DIRS = frozenset({"docs", "doc"})

# Every finding contains one of these triggers. Each is a fast search (memchr for a
# rare byte, or a regex with a literal first byte); the full pattern then runs only
# on the lines that hold a trigger, so ordinary text costs a few passes in C.
_BACKSLASH_TRIGGER = re.compile(rb"\\[Uu][Ss][Ee][Rr][Ss]")
_TILDE_TRIGGER = re.compile(rb"~")
_DOLLAR_TRIGGER = re.compile(rb"\$(?:HOME|\{HOME\}|env:USERPROFILE)")
_PERCENT_TRIGGER = re.compile(rb"%(?:USERPROFILE|HOMEPATH)%")
_HOME_CALL_TRIGGER = re.compile(rb"home\(\)")
PYTHON_SUFFIXES = (".py", ".pyi", ".ipynb")


def _slash_trigger(root_literals: list[bytes]) -> re.Pattern[bytes]:
    roots = b"".join(b"|" + re.escape(r[1:]) for r in root_literals if r.startswith(b"/"))
    return re.compile(rb"/(?:home/|[Uu][Ss][Ee][Rr][Ss]/|root|tmp|var/|mnt/|private/" + roots + rb")")

_USER = rb"[A-Za-z0-9_][\w.~-]*"
_UNIX_TAIL = rb"(?:/[^\s\"'`,;:()<>\[\]{}|*?=\\$]*)?"
_WIN_SEP = rb"(?:\\\\|\\|/)"
_WIN_TAIL = rb"(?:" + _WIN_SEP + rb"[^\s\"'`,;:()<>\[\]{}|*?=$/\\]*)*"
_PATH_TAIL = rb"[^\s\"'`,;:()<>\[\]{}|*?=\\$]*"


def _shape_patterns(root_literals: list[bytes]) -> list[tuple[str, re.Pattern[bytes]]]:
    """One pattern per shape, in priority order (the project root before plain home paths).

    Each starts with a literal, so the regex engine searches it fast; one alternation of
    them all would be tried byte by byte, ten times slower. What may precede a match
    (no word, no URL) is checked in Python (``_preceded_ok``).
    """
    parts = []
    if root_literals:
        roots = b"|".join(re.escape(r) for r in sorted(set(root_literals), key=len, reverse=True))
        parts.append(rb"(?P<project>(?:" + roots + rb")(?![\w.-])" + _UNIX_TAIL + rb")")
    parts += [
        rb"(?P<wsl>/mnt/[A-Za-z]/[Uu]sers/" + _USER + _UNIX_TAIL + rb")",
        rb"(?P<home>(?:/home/" + _USER + rb"|/Users/" + _USER + rb"|/root(?![\w.-]))" + _UNIX_TAIL + rb")",
        rb"(?P<windows>[A-Za-z]:" + _WIN_SEP + rb"[Uu][Ss][Ee][Rr][Ss]" + _WIN_SEP + _USER + _WIN_TAIL + rb")",
        rb"(?P<temp>(?:/private/var/folders|/var/folders|/private/tmp|/var/tmp|/tmp)(?![\w.-])" + _UNIX_TAIL + rb")",
        rb"(?P<lookup>expanduser\(\s*[rRuU]?(?P<q>[\"'])~[^\"'\n]*(?P=q)\s*\)|Path\.home\(\))",
        rb"(?P<tilde>~(?:" + _USER + rb")?/" + _PATH_TAIL + rb")",
        rb"(?P<homevar>\$HOME\b|\$\{HOME\}|%USERPROFILE%|%HOMEPATH%|\$env:USERPROFILE\b)"
        + rb"(?:/" + _PATH_TAIL + rb"|\\[^\s\"'`,;:()<>\[\]{}|*?=$]*)?",
    ]
    patterns = []
    for part in parts:
        pattern = re.compile(part)
        patterns.append((next(iter(pattern.groupindex)), pattern))
    return patterns


def _word_byte(byte: int) -> bool:
    return byte >= 0x80 or byte == 0x5F or 0x30 <= byte <= 0x39 or 0x41 <= byte <= 0x5A or 0x61 <= byte <= 0x7A


# What may not come right before a path of each shape (a word, a URL, another path).
_PATH_NOT_AFTER = frozenset(b"./~\\$%-")


def _preceded_ok(group: str, data: bytes, start: int) -> bool:
    if start == 0:
        return True
    before = data[start - 1]
    if group in ("project", "wsl", "home", "temp"):
        return not _word_byte(before) and before not in _PATH_NOT_AFTER
    if group == "windows":
        return not _word_byte(before)
    if group == "tilde":
        return before in b"\"' \t\r\n=,["
    return True


_GROUP_SHAPES = {
    "project": "project-absolute",
    "wsl": "wsl-user",
    "home": "home",
    "windows": "windows-user",
    "temp": "temp-dir",
    "lookup": "home-lookup",
    "tilde": "tilde",
    "homevar": "home-var",
}
# A temporary folder only matters where the line writes something there.
_OUTPUT_WORDS = re.compile(rb"(?i)out|save|dump|write|export|\blogs?\b|log_?dir|checkpoint|ckpt|result|\bruns\b|dest|cache_dir")
_URL_SCHEME = re.compile(rb"[A-Za-z][A-Za-z0-9+.-]*://")


@dataclass
class Finding:
    file: str
    line: int
    column: int
    text: str
    shape: str
    kind: str
    category: str
    replacement: str
    parameter: str | None = None
    value: str | None = None
    rest: str = ""
    project_relative: str | None = None

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass
class Skipped:
    file: str
    reason: str

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass
class ScanResult:
    root: Path
    findings: list[Finding] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    files_scanned: int = 0
    bytes_scanned: int = 0
    parameters: dict[str, str] = field(default_factory=dict)

    @property
    def failing(self) -> list[Finding]:
        """Findings that keep the command failing: everything but documentation."""
        return [f for f in self.findings if f.category != "docs"]


def category_of(relative: str) -> str:
    path = PurePosixPath(relative)
    name = path.name.lower()
    suffix = path.suffix.lower()
    if suffix == ".ipynb":
        return "notebook"
    if name.startswith("requirements") and suffix in (".txt", ".in"):
        return "config"
    if suffix in CONFIG_SUFFIXES or name.startswith(".env"):
        return "config"
    if suffix in DOCS_SUFFIXES or name.startswith(("readme", "changelog", "license")):
        return "docs"
    if any(part.lower() in DOCS_DIRS for part in path.parts[:-1]):
        return "docs"
    return "code"


def scan(project: Path | str | None = None, *, max_bytes: int = MAX_FILE_BYTES) -> ScanResult:
    """Scan every text file under ``project`` (default: the current folder)."""
    root = Path(project) if project is not None else Path.cwd()
    root_real = os.path.realpath(root)
    result = ScanResult(root=Path(root_real))
    roots = {os.fsencode(root_real), os.fsencode(os.path.abspath(root))}
    literals = [r for r in roots if r.count(b"/") >= 2]
    scanner = make_scanner(Path(root_real), literals)
    for relative, entry in _walk(root_real, result):
        scanner.scan_file(relative, entry, result, max_bytes)
    result.parameters = dict(scanner.registry.assigned)
    result.findings.sort(key=lambda f: (f.file, f.line, f.column))
    result.skipped.sort(key=lambda s: s.file)
    return result


def make_scanner(root: Path, literals: list[bytes] | None = None) -> "_Scanner":
    """A scanner for ``root`` (a resolved folder): its pattern, caches and parameter names."""
    if literals is None:
        literals = [os.fsencode(str(root))]
    return _Scanner(root, _shape_patterns(literals), literals)


def _walk(root: str, result: ScanResult):
    """Yield (relative POSIX path, DirEntry) of regular files; symlinks are never followed.

    Order is stable (a folder's files, then its subfolders, alphabetically), so that
    parameter names are handed out the same way on every run.
    """
    stack = [("", root)]
    while stack:
        prefix, folder = stack.pop()
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError as error:
            result.skipped.append(Skipped(prefix or ".", f"folder cannot be listed: {error.strerror}"))
            continue
        subfolders = []
        for entry in entries:
            relative = f"{prefix}{entry.name}"
            if entry.is_symlink():
                result.skipped.append(Skipped(relative, _symlink_reason(root, entry.path)))
            elif entry.is_dir(follow_symlinks=False):
                if entry.name not in SKIP_DIRS:
                    subfolders.append((relative + "/", entry.path))
            elif entry.is_file(follow_symlinks=False):
                if entry.name not in SKIP_FILES:
                    yield relative, entry
            else:
                result.skipped.append(Skipped(relative, "not a regular file (FIFO, socket or device)"))
        stack.extend(reversed(subfolders))


def _symlink_reason(root: str, path: str) -> str:
    target = os.path.realpath(path)
    if not os.path.exists(target):
        return "broken symlink or symlink loop"
    if target != root and not target.startswith(root + os.sep):
        return f"symlink leaving the project (to {target})"
    return "symlink inside the project (its target is scanned in place)"


class _Scanner:
    def __init__(self, root: Path, patterns: list[tuple[str, re.Pattern[bytes]]], root_literals: list[bytes]) -> None:
        self.root = root
        self.patterns = patterns
        self.root_literals = root_literals
        self.slash_trigger = _slash_trigger(root_literals)
        self.registry = ParameterRegistry(read_env_local(root / ENV_LOCAL))
        self.root_name = root.name
        self._exists_cache: dict[str, bool] = {}

    def scan_file(self, relative: str, entry: os.DirEntry, result: ScanResult, max_bytes: int) -> None:
        try:
            size = entry.stat(follow_symlinks=False).st_size
        except OSError as error:
            result.skipped.append(Skipped(relative, f"cannot be read: {error.strerror}"))
            return
        if size > max_bytes:
            result.skipped.append(Skipped(relative, f"too large ({size} bytes > limit of {max_bytes})"))
            return
        data = read_bytes(entry.path)
        if isinstance(data, str):
            result.skipped.append(Skipped(relative, data))
            return
        if b"\0" in data[:BINARY_SNIFF_BYTES]:
            result.skipped.append(Skipped(relative, "binary file"))
            return
        if not data.isascii():
            try:
                data.decode("utf-8")
            except UnicodeDecodeError as error:
                result.skipped.append(Skipped(relative, f"not UTF-8 text (byte {error.start})"))
                return
        result.files_scanned += 1
        result.bytes_scanned += len(data)
        lines = self.candidate_lines(relative, data)
        if not lines:
            return
        category = category_of(relative)
        if category == "notebook" and not is_notebook(data):
            result.skipped.append(Skipped(relative, "malformed notebook (not valid JSON with a list of cells)"))
            return
        result.findings.extend(self.findings_in(relative, data, category, lines))

    def candidate_lines(self, relative: str, data: bytes) -> list[int]:
        """Start offsets of the lines holding a trigger (empty: the file cannot hold a finding)."""
        hits = [m.start() for m in self.slash_trigger.finditer(data)]
        for byte, trigger in ((b"~", _TILDE_TRIGGER), (b"\\", _BACKSLASH_TRIGGER), (b"$", _DOLLAR_TRIGGER), (b"%", _PERCENT_TRIGGER)):
            if byte in data:
                hits += [m.start() for m in trigger.finditer(data)]
        if relative.endswith(PYTHON_SUFFIXES) and b"home()" in data:
            hits += [m.start() for m in _HOME_CALL_TRIGGER.finditer(data)]
        return sorted({data.rfind(b"\n", 0, hit) + 1 for hit in hits})

    def findings_in(self, relative: str, data: bytes, category: str, lines: list[int] | None = None) -> list[Finding]:
        """Every finding in ``data`` (the text of ``relative``), parameters named by the registry."""
        if lines is None:
            lines = self.candidate_lines(relative, data)
        notebook = _NotebookLocator(data) if category == "notebook" else None
        found = []
        line_number, counted_to = 1, 0
        for line_start in lines:
            line_number += data.count(b"\n", counted_to, line_start)
            counted_to = line_start
            line_end = data.find(b"\n", line_start)
            line_end = len(data) if line_end == -1 else line_end
            for group, start, end in self._matches_in_line(data, line_start, line_end):
                finding = self._finding(relative, data, group, start, end, line_start, line_end, line_number, category, notebook)
                if finding is not None:
                    found.append(finding)
        return found

    def _matches_in_line(self, data: bytes, line_start: int, line_end: int) -> list[tuple[str, int, int]]:
        """Non-overlapping (group, start, end) in the line: leftmost first, then by priority."""
        candidates = []
        for priority, (group, pattern) in enumerate(self.patterns):
            for match in pattern.finditer(data, line_start, line_end):
                start, end = match.span()
                if not _preceded_ok(group, data, start):
                    continue
                if group == "lookup":  # take in the receiver: os.path.expanduser, pathlib.Path.home
                    while start > line_start and (_word_byte(data[start - 1]) or data[start - 1] == 0x2E):
                        start -= 1
                candidates.append((start, priority, end, group))
        chosen, taken_to = [], line_start
        for start, _, end, group in sorted(candidates):
            if start >= taken_to:
                chosen.append((group, start, end))
                taken_to = end
        return chosen

    def _finding(self, relative, data, group, start, end, line_start, line_end, line, category, notebook) -> Finding | None:
        shape = _GROUP_SHAPES[group]
        if _inside_url(data, line_start, start):
            return None
        if shape == "temp-dir" and not _OUTPUT_WORDS.search(data, line_start, line_end):
            return None
        text = data[start:end].decode("utf-8", errors="replace").rstrip(".")
        kind = shape
        if notebook is not None:
            kind = notebook.kind_at(start)
        column = len(data[line_start:start].decode("utf-8", errors="replace")) + 1
        target = classify(self.root, shape, text, self._exists)
        if target.parameter is not None:
            target = self.registry.name(target)
        return Finding(
            file=relative, line=line, column=column, text=text, shape=shape, kind=kind,
            category=category, replacement=target.replacement, parameter=target.parameter,
            value=target.value, rest=target.rest, project_relative=target.relative,
        )

    def _exists(self, relative: str) -> bool:
        if relative not in self._exists_cache:
            self._exists_cache[relative] = os.path.lexists(self.root / relative)
        return self._exists_cache[relative]


def read_bytes(path: str) -> bytes | str:
    """The file's bytes, or the reason it cannot be read (a string)."""
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except IsADirectoryError:
        return "cannot be read: it is a folder"
    except OSError as error:
        return f"cannot be read: {error.strerror or error}"


def _inside_url(data: bytes, line_start: int, start: int) -> bool:
    """True when the hit is part of a ``scheme://`` word (a URL, not a path)."""
    word_start = start
    while word_start > line_start and data[word_start - 1 : word_start] not in b" \t\"'`(<[=,":
        word_start -= 1
    return _URL_SCHEME.search(data, word_start, start + 1) is not None


# --- classification: what a path is and what it becomes ------------------------------

_PARAM_RE = re.compile(r"[^A-Z0-9]+")


@dataclass(frozen=True)
class Target:
    """Where a found path points: inside the project (relative) or a parameter."""

    replacement: str
    relative: str | None = None
    parameter: str | None = None
    value: str | None = None
    rest: str = ""


def split_home(shape: str, text: str) -> tuple[str, list[str]]:
    """(the machine-specific prefix as written, the components after it)."""
    if shape == "home-lookup":
        inner = re.search(r"[\"']~([^\"']*)[\"']", text)
        rest = inner.group(1) if inner else ""
        return "~", [c for c in rest.split("/") if c]
    if shape in ("windows-user", "home-var") and ("\\" in text):
        normal = text.replace("\\\\", "\\")
        parts = re.split(r"[\\/]", normal)
        count = 3 if shape == "windows-user" else 1
        return "\\".join(parts[:count]), [c for c in parts[count:] if c]
    parts = text.split("/")
    if shape == "tilde":
        return parts[0], [c for c in parts[1:] if c]
    if shape == "home-var":
        return parts[0], [c for c in parts[1:] if c]
    if shape == "windows-user":
        return "/".join(parts[:3]), [c for c in parts[3:] if c]
    if shape == "wsl-user":
        return "/".join(parts[:5]), [c for c in parts[5:] if c]
    if shape == "home":
        count = 2 if parts[1] == "root" else 3
        return "/".join(parts[:count]), [c for c in parts[count:] if c]
    if shape == "temp-dir":
        for prefix in ("/private/var/folders", "/var/folders", "/private/tmp", "/var/tmp", "/tmp"):
            if text == prefix or text.startswith(prefix + "/"):
                return prefix, [c for c in text[len(prefix):].split("/") if c]
    return "", [c for c in parts if c]


def parameter_name(component: str | None) -> str:
    if not component:
        return "HOME_ROOT"
    stem = component.lstrip(".")
    name = _PARAM_RE.sub("_", stem.upper()).strip("_") or "HOME"
    if name[0].isdigit():
        name = "P_" + name
    return f"{name}_ROOT"


def classify(root: Path, shape: str, text: str, exists) -> Target:
    trailing = "/" if text.endswith(("/", "\\")) and len(text) > 1 else ""
    if shape == "project-absolute":
        relative = _strip_any_root(root, text)
        relative = (relative + trailing) if relative else "."
        return Target(replacement=relative, relative=relative)
    if shape == "home-lookup" and text.endswith("home()"):
        return Target(replacement="${HOME_ROOT}", parameter="HOME_ROOT", value="~")
    prefix, components = split_home(shape, text)
    relative = _project_tail(root.name, components, exists)
    if relative is not None:
        relative = relative + trailing if relative != "." else relative
        return Target(replacement=relative, relative=relative)
    first = components[0] if components else None
    if first is not None and len(components) == 1 and "." in first.lstrip(".") and not trailing:
        first = None  # a single file right in the home folder: the home folder is the parameter
    if shape == "temp-dir" and first is None:
        name = "TMP_ROOT"
    else:
        name = parameter_name(first)
    separator = "\\" if "\\" in prefix else "/"
    value = prefix + (separator + first if first else "")
    rest = "/".join(components[1:] if first else components)
    rest = rest + trailing if rest else trailing
    return Target(replacement=_placeholder(name, rest), parameter=name, value=value, rest=rest)


def _placeholder(name: str, rest: str) -> str:
    return "${" + name + "}" + ("/" + rest.lstrip("/") if rest else "")


ENV_LOCAL = ".env.local"


def read_env_local(path: Path) -> dict[str, str]:
    """NAME=value lines of a dotenv file (comments and blank lines ignored)."""
    values: dict[str, str] = {}
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return values
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        name, _, value = line.removeprefix("export ").partition("=")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        values[name.strip()] = value
    return values


class ParameterRegistry:
    """One name per machine-specific value, stable across runs (.env.local is read first)."""

    def __init__(self, existing: dict[str, str]) -> None:
        self.existing = dict(existing)
        self.assigned: dict[str, str] = {}
        self._by_value = {value: name for name, value in existing.items()}

    def seed(self, name: str, value: str) -> None:
        """Reuse a name handed out by an earlier pass (a scan before a fix)."""
        if value not in self._by_value:
            self._by_value[value] = name
            self.existing.setdefault(name, value)

    def name(self, target: Target) -> Target:
        value = target.value or ""
        name = self._by_value.get(value)
        if name is None:
            name, number = target.parameter, 2
            while name in self.existing or name in self.assigned:
                name = f"{target.parameter}_{number}"
                number += 1
            self._by_value[value] = name
        self.assigned[name] = value
        return Target(replacement=_placeholder(name, target.rest), parameter=name, value=value, rest=target.rest)


def _strip_any_root(root: Path, text: str) -> str:
    for candidate in (os.path.realpath(root), os.path.abspath(root)):
        if text == candidate or text.startswith(candidate + "/"):
            return text[len(candidate):].strip("/")
    return text.strip("/")


def _project_tail(root_name: str, components: list[str], exists) -> str | None:
    """The project-relative path an absolute path from any machine points at, if any.

    A tail counts when the folder before it carries the project's name and the tail's
    first part exists here, or when a tail of two or more parts exists in the project.
    """
    for index in range(len(components)):
        tail = components[index:]
        if index > 0 and components[index - 1] == root_name and exists(tail[0]):
            return "/".join(tail)
        if len(tail) >= 2 and exists("/".join(tail)):
            return "/".join(tail)
    if components and components[-1] == root_name:
        return "."
    return None


# --- notebooks: which part of the .ipynb a byte offset falls in ---------------------

_JSON_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*"|[{}\[\]:,]')


def is_notebook(data: bytes) -> bool:
    try:
        document = json.loads(data)
    except ValueError:
        return False
    return isinstance(document, dict) and isinstance(document.get("cells"), list)


class _NotebookLocator:
    """Maps byte offsets of a notebook's JSON text to source, output or metadata."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.spans: list[tuple[int, int, str]] | None = None

    def kind_at(self, offset: int) -> str:
        if self.spans is None:
            self.spans = list(self._string_spans())
        for start, end, kind in self.spans:
            if start <= offset < end:
                return kind
        return "notebook-metadata"

    def _string_spans(self):
        stack: list[list] = []  # each: [container kind, current key or index, expecting key]
        for token in _JSON_TOKEN.finditer(self.data):
            text = token.group(0)
            if text in (b"{", b"["):
                if stack and stack[-1][0] == "[":
                    stack[-1][1] += 1
                stack.append(["{", None, True] if text == b"{" else ["[", -1, False])
            elif text in (b"}", b"]"):
                stack.pop()
            elif text == b":":
                stack[-1][2] = False
            elif text == b",":
                if stack[-1][0] == "{":
                    stack[-1][2] = True
            elif stack and stack[-1][0] == "{" and stack[-1][2]:
                stack[-1][1] = text[1:-1].decode("utf-8", errors="replace")
            else:
                if stack[-1][0] == "[":
                    stack[-1][1] += 1
                yield token.start(), token.end(), _notebook_part([frame[1] for frame in stack])


def _notebook_part(keys: list) -> str:
    if len(keys) >= 3 and keys[0] == "cells":
        if keys[2] == "source":
            return "notebook-source"
        if keys[2] == "outputs":
            return "notebook-output"
    return "notebook-metadata"
