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

import os
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path, PurePosixPath

from bundler.machinepaths import GROUP_SHAPES, inside_url, preceded_ok, shape_patterns, word_byte
from bundler.portability.classify import ENV_LOCAL, ParameterRegistry, classify, read_env_local
from bundler.portability.notebook import _NotebookLocator, is_notebook

MAX_FILE_BYTES = 10 * 1024 * 1024
BINARY_SNIFF_BYTES = 8192

# Folders never scanned: tools' own state, environments, and bundler's backups.
SKIP_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        "__pycache__",
        ".venv",
        "venv",
        ".tox",
        ".nox",
        "node_modules",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".ipynb_checkpoints",
        ".bundler",
    }
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


# What may not come right before a path of each shape (a word, a URL, another path).


# A temporary folder only matters where the line writes something there.
_OUTPUT_WORDS = re.compile(rb"(?i)out|save|dump|write|export|\blogs?\b|log_?dir|checkpoint|ckpt|result|\bruns\b|dest|cache_dir")


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


def make_scanner(root: Path, literals: list[bytes] | None = None) -> _Scanner:
    """A scanner for ``root`` (a resolved folder): its pattern, caches and parameter names."""
    if literals is None:
        literals = [os.fsencode(str(root))]
    return _Scanner(root, shape_patterns(literals), literals)


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
                if not preceded_ok(group, data, start):
                    continue
                if group == "lookup":  # take in the receiver: os.path.expanduser, pathlib.Path.home
                    while start > line_start and (word_byte(data[start - 1]) or data[start - 1] == 0x2E):
                        start -= 1
                candidates.append((start, priority, end, group))
        chosen, taken_to = [], line_start
        for start, _, end, group in sorted(candidates):
            if start >= taken_to:
                chosen.append((group, start, end))
                taken_to = end
        return chosen

    def _finding(self, relative, data, group, start, end, line_start, line_end, line, category, notebook) -> Finding | None:
        shape = GROUP_SHAPES[group]
        if inside_url(data, line_start, start):
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
            file=relative,
            line=line,
            column=column,
            text=text,
            shape=shape,
            kind=kind,
            category=category,
            replacement=target.replacement,
            parameter=target.parameter,
            value=target.value,
            rest=target.rest,
            project_relative=target.relative,
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


# --- classification: what a path is and what it becomes ------------------------------


# --- notebooks: which part of the .ipynb a byte offset falls in ---------------------
