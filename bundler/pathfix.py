"""`bundler paths --fix`: rewrite machine-specific paths so the folder runs anywhere.

What a found path becomes:
- inside the project → a project-relative path; Python computes it from the project
  root at run time (``project_path("data/x.csv")``), configs hold it relative;
- outside the project → a named parameter (``DATA_ROOT``). Python reads it with
  ``param_path("DATA_ROOT", "train.csv")``; configs, shell scripts and notebook text
  hold ``${DATA_ROOT}/train.csv``.

How a parameter gets its value at run time (the helper ``_bundle_paths.py`` written
beside each rewritten Python file does this; configs expand ``${NAME}`` the same way):
the environment variable ``NAME`` first, then the git-ignored ``.env.local`` at the
project root (where ``--fix`` keeps the original machine-specific value, so nothing is
lost), then the default in the ``"paths"`` object of ``config/pilot.json`` (or
``config/paths.json`` when the project has no pilot config), where every parameter is
declared; ``"${NAME}"`` there means "no default: it must be given".

Nothing is lost: every changed file is first copied under
``.bundler/backups/<stamp>/`` (kept until the user removes it), JSON, YAML, TOML and
notebooks are parsed again after the rewrite (a rewrite that would break one is refused
and reported), and a file without any write permission bit is never modified.
"""

from __future__ import annotations

import ast
import io
import json
import re
import shutil
import sys
import time
import tokenize
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from bundler import paths
from bundler.fsutil import atomic_write_text

HELPER_NAME = "_bundle_paths.py"
BACKUP_DIR = ".bundler/backups"
PARAMETER_FILES = ("config/pilot.json", "config/paths.json")
IMPORT_MARKER = "_bundle_paths import"

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


@dataclass
class FileChange:
    file: str
    status: str  # fixed | refused | unchanged
    fixed: int = 0
    manual: list[dict] = field(default_factory=list)
    reason: str = ""

    def as_dict(self) -> dict:
        return {"file": self.file, "status": self.status, "fixed": self.fixed, "manual": self.manual, "reason": self.reason}


@dataclass
class FixResult:
    root: Path
    changes: list[FileChange] = field(default_factory=list)
    parameters: dict[str, str] = field(default_factory=dict)
    written: list[str] = field(default_factory=list)
    backup_dir: str | None = None

    @property
    def refused(self) -> list[FileChange]:
        return [c for c in self.changes if c.status == "refused"]


def fix(project: Path | str | None = None, *, apply: bool = True, scan_result: paths.ScanResult | None = None) -> FixResult:
    """Rewrite every failing finding of ``project``; with ``apply=False`` only plan it."""
    result_scan = scan_result or paths.scan(project)
    root = result_scan.root
    scanner = paths.make_scanner(root)
    for finding in result_scan.findings:  # the names the report showed are the names written
        if finding.parameter is not None:
            scanner.registry.seed(finding.parameter, finding.value or "")
    outcome = FixResult(root=root)
    by_file: dict[str, list[paths.Finding]] = {}
    for finding in result_scan.failing:
        by_file.setdefault(finding.file, []).append(finding)
    new_texts: dict[str, str] = {}
    helper_dirs: set[str] = set()
    for relative in sorted(by_file):
        change, new_text, needs_helper = _rewrite_file(root, relative, scanner)
        outcome.changes.append(change)
        if new_text is not None:
            new_texts[relative] = new_text
            if needs_helper:
                helper_dirs.add(str(PurePosixPath(relative).parent))
    outcome.parameters = dict(scanner.registry.assigned)
    if not apply or not new_texts:
        return outcome
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    backups = root / BACKUP_DIR / stamp
    number = 1
    while backups.exists():
        number += 1
        backups = root / BACKUP_DIR / f"{stamp}-{number}"
    outcome.backup_dir = str(backups.relative_to(root))
    support = _support_files(root, outcome.parameters, helper_dirs)
    for relative, text in list(new_texts.items()) + support:
        target = root / relative
        if target.exists():
            _backup(target, backups / relative)
        atomic_write_text(target, text)
        outcome.written.append(relative)
    return outcome


def _backup(source: Path, destination: Path) -> None:
    destination.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(source, destination)


# --- one file --------------------------------------------------------------------------


def _rewrite_file(root: Path, relative: str, scanner) -> tuple[FileChange, str | None, bool]:
    """(what happened, the new text or None, whether it needs the Python helper)."""
    path = root / relative
    try:
        mode = path.stat().st_mode
        data = path.read_bytes()
    except OSError as error:
        return FileChange(relative, "refused", reason=f"cannot be read: {error.strerror or error}"), None, False
    if not mode & 0o222:
        # Root may write anything; a file with no write bit is a statement by its owner.
        return FileChange(relative, "refused", reason="read-only file (no write permission bit): not modified"), None, False
    text = data.decode("utf-8")
    category = paths.category_of(relative)
    findings = [f for f in scanner.findings_in(relative, data, category)]
    if category == "notebook":
        new_text, fixed, manual = _rewrite_notebook(text, scanner, relative)
        needs_helper = fixed > 0 and IMPORT_MARKER in new_text and IMPORT_MARKER not in text
    elif relative.endswith((".py", ".pyi")):
        new_text, fixed, manual = rewrite_python(text, findings)
        needs_helper = IMPORT_MARKER in new_text
    else:
        new_text, fixed, manual = rewrite_text(text, findings)
        needs_helper = False
    if new_text == text:
        return FileChange(relative, "unchanged", manual=manual, reason="no automatic rewrite" if manual else ""), None, False
    problem = parse_problem(relative, new_text)
    if problem is not None:
        return FileChange(relative, "refused", manual=manual, reason=f"the rewrite would not parse ({problem}): not modified"), None, False
    return FileChange(relative, "fixed", fixed=fixed, manual=manual), new_text, needs_helper


def parse_problem(relative: str, text: str) -> str | None:
    """Why ``text`` no longer parses as its file type, or None when it does."""
    suffix = PurePosixPath(relative).suffix.lower()
    try:
        if suffix in (".json", ".ipynb"):
            document = json.loads(text)
            if suffix == ".ipynb" and not (isinstance(document, dict) and isinstance(document.get("cells"), list)):
                return "no list of cells"
        elif suffix in (".yaml", ".yml"):
            import yaml

            list(yaml.safe_load_all(text))
        elif suffix == ".toml":
            tomllib.loads(text)
        elif suffix in (".py", ".pyi"):
            ast.parse(text)
    except Exception as error:  # noqa: BLE001 - any parser's complaint is the answer
        return f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}".rstrip(": ")
    return None


# --- plain text: configs, shell, Dockerfiles ---------------------------------------------


def rewrite_text(text: str, findings: list[paths.Finding]) -> tuple[str, int, list[dict]]:
    """Replace each finding by its textual replacement (``${NAME}/rest`` or a relative path)."""
    lines = text.splitlines(keepends=True)
    fixed, manual = 0, []
    for finding in sorted(findings, key=lambda f: (f.line, f.column), reverse=True):
        line = lines[finding.line - 1]
        start = finding.column - 1
        if line[start : start + len(finding.text)] != finding.text:
            manual.append(_manual(finding, "text moved while rewriting"))
            continue
        if finding.shape == "home-lookup":
            manual.append(_manual(finding, "a home lookup outside Python code"))
            continue
        lines[finding.line - 1] = line[:start] + finding.replacement + line[start + len(finding.text) :]
        fixed += 1
    return "".join(lines), fixed, manual


def _manual(finding: paths.Finding, why: str) -> dict:
    return {"line": finding.line, "column": finding.column, "text": finding.text, "why": why}


# --- Python ----------------------------------------------------------------------------

_STRING_PREFIX = re.compile(r"(?i)([rbuf]*)('''|\"\"\"|'|\")")


def rewrite_python(source: str, findings: list[paths.Finding], *, import_block: str | None = None) -> tuple[str, int, list[dict]]:
    """Turn each finding into code that reads the parameter or the project root at run time."""
    if not findings:
        return source, 0, []
    line_offsets = [0]
    for line in source.splitlines(keepends=True):
        line_offsets.append(line_offsets[-1] + len(line))
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return source, 0, [_manual(f, "the file does not tokenize as Python") for f in findings]

    def offset(row: int, col: int) -> int:
        return line_offsets[row - 1] + col

    spans = [(offset(*t.start), offset(*t.end), t) for t in tokens if t.type in (tokenize.STRING, tokenize.COMMENT)]
    edits: list[tuple[int, int, str]] = []
    manual: list[dict] = []
    by_token: dict[int, list[tuple[int, int, paths.Finding]]] = {}
    for finding in findings:
        start = offset(finding.line, finding.column - 1)
        end = start + len(finding.text)
        if source[start:end] != finding.text:
            manual.append(_manual(finding, "text moved while rewriting"))
            continue
        token_index = next((i for i, (s, e, _) in enumerate(spans) if s <= start and end <= e), None)
        if token_index is None:
            if finding.shape == "home-lookup":
                edits.append((start, end, _lookup_expression(finding)))
            else:
                manual.append(_manual(finding, "not inside a string or a comment"))
            continue
        by_token.setdefault(token_index, []).append((start, end, finding))
    for token_index, hits in by_token.items():
        token_start, token_end, token = spans[token_index]
        if token.type == tokenize.COMMENT or _is_triple_quoted(token.string):
            # comments and docstrings/help texts are prose: they get the placeholder text
            edits += [(s, e, f.replacement) for s, e, f in hits]
            continue
        edit, why = _string_edit(source, token_start, token_end, hits)
        if edit is None:
            manual += [_manual(f, why) for _, _, f in hits]
        else:
            edits.append(edit)
    new_source = source
    for start, end, replacement in sorted(edits, reverse=True):
        new_source = new_source[:start] + replacement + new_source[end:]
    fixed = len(findings) - len(manual)
    uses_helper = any("param_path(" in text or "project_path(" in text for _, _, text in edits)
    if uses_helper and IMPORT_MARKER not in source:
        new_source = _insert_import(new_source, import_block or PACKAGE_IMPORT)
    return new_source, fixed, manual


def _is_triple_quoted(literal: str) -> bool:
    head = _STRING_PREFIX.match(literal)
    return head is not None and len(head.group(2)) == 3


def _call(finding: paths.Finding, quote: str) -> str:
    if finding.project_relative is not None:
        relative = finding.project_relative
        return "project_path()" if relative == "." else f"project_path({quote}{relative}{quote})"
    rest = f", {quote}{finding.rest}{quote}" if finding.rest else ""
    return f"param_path({quote}{finding.parameter}{quote}{rest})"


def _lookup_expression(finding: paths.Finding) -> str:
    if finding.text.endswith("home()"):
        receiver = finding.text[: -len(".home()")]
        return f'{receiver}(param_path("{finding.parameter}"))'
    return _call(finding, '"')


def _string_edit(source: str, token_start: int, token_end: int, hits) -> tuple[tuple[int, int, str] | None, str]:
    literal = source[token_start:token_end]
    head = _STRING_PREFIX.match(literal)
    if head is None:
        return None, "unrecognised string literal"
    prefix, quote = head.group(1), head.group(2)
    if "b" in prefix.lower():
        return None, "inside a bytes literal"
    body_start = token_start + len(prefix) + len(quote)
    body_end = token_end - len(quote)
    hits = sorted(hits, key=lambda hit: hit[0])
    is_f = "f" in prefix.lower()
    if len(hits) == 1 and not is_f and hits[0][0] == body_start and hits[0][1] == body_end:
        return (token_start, token_end, _call(hits[0][2], '"')), ""
    inner = "'" if '"' in quote else '"'

    def keep(text: str) -> str:
        return text if is_f else text.replace("{", "{{").replace("}", "}}")

    pieces, cursor = [], body_start
    for start, end, finding in hits:
        pieces.append(keep(source[cursor:start]))
        pieces.append("{" + _call(finding, inner) + "}")
        cursor = end
    pieces.append(keep(source[cursor:body_end]))
    new_prefix = prefix if is_f else prefix + "f"
    return (token_start, token_end, new_prefix + quote + "".join(pieces) + quote), ""


PACKAGE_IMPORT = (
    "try:  # machine-specific paths: see _bundle_paths.py (written by `bundler paths --fix`)\n"
    "    from ._bundle_paths import param_path, project_path\n"
    "except ImportError:  # run as a script, not as part of a package\n"
    "    from _bundle_paths import param_path, project_path\n"
)
NOTEBOOK_IMPORT = "from _bundle_paths import param_path, project_path  # written by `bundler paths --fix`\n"


def _insert_import(source: str, block: str) -> str:
    """Insert after the module docstring and ``from __future__`` imports."""
    try:
        body = ast.parse(source).body
    except SyntaxError:
        body = []
    after = 0
    for index, node in enumerate(body):
        is_docstring = index == 0 and isinstance(node, ast.Expr) and isinstance(getattr(node, "value", None), ast.Constant) and isinstance(node.value.value, str)
        is_future = isinstance(node, ast.ImportFrom) and node.module == "__future__"
        if is_docstring or is_future:
            after = node.end_lineno
        else:
            break
    lines = source.splitlines(keepends=True)
    if after == 0:
        while after < len(lines) and (lines[after].startswith("#!") or re.match(r"#.*coding[:=]", lines[after])):
            after += 1
    if after and not lines[after - 1].endswith("\n"):
        lines[after - 1] += "\n"
    return "".join(lines[:after]) + block + "".join(lines[after:])


# --- notebooks -------------------------------------------------------------------------


def _rewrite_notebook(text: str, scanner, relative: str) -> tuple[str, int, list[dict]]:
    """Code cells become Python that reads parameters; outputs are scrubbed; metadata made relative."""
    document = json.loads(text)
    fixed, manual = 0, []
    for cell in document.get("cells", []):
        if not isinstance(cell, dict):
            continue
        source = cell.get("source", "")
        joined = "".join(source) if isinstance(source, list) else str(source)
        found = scanner.findings_in(relative, joined.encode("utf-8"), "code")
        if found:
            if cell.get("cell_type") == "code":
                new, count, problems = rewrite_python(joined, found, import_block=NOTEBOOK_IMPORT)
            else:
                new, count, problems = rewrite_text(joined, found)
            fixed += count
            manual += problems
            cell["source"] = new.splitlines(keepends=True) if isinstance(source, list) else new
        if "outputs" in cell:
            cell["outputs"], count = _scrub(cell["outputs"], scanner, relative)
            fixed += count
        if "metadata" in cell:
            cell["metadata"], count = _scrub(cell["metadata"], scanner, relative)
            fixed += count
    if "metadata" in document:
        document["metadata"], count = _scrub(document["metadata"], scanner, relative)
        fixed += count
    indent = _json_indent(text)
    return json.dumps(document, indent=indent, ensure_ascii=False) + "\n", fixed, manual


def _scrub(value, scanner, relative: str):
    """Replace every path in the strings of ``value`` by its textual replacement."""
    if isinstance(value, str):
        found = scanner.findings_in(relative, value.encode("utf-8"), "config")
        if not found:
            return value, 0
        new, count, _ = rewrite_text(value, found)
        return new, count
    if isinstance(value, list):
        total, items = 0, []
        for item in value:
            new, count = _scrub(item, scanner, relative)
            items.append(new)
            total += count
        return items, total
    if isinstance(value, dict):
        total, items = 0, {}
        for key, item in value.items():
            new, count = _scrub(item, scanner, relative)
            items[key] = new
            total += count
        return items, total
    return value, 0


def _json_indent(text: str) -> int:
    match = re.search(r"\n( +)\S", text)
    return len(match.group(1)) if match else 1


# --- what the fixed files need: helper, parameters, .env.local, .gitignore --------------


def _support_files(root: Path, parameters: dict[str, str], helper_dirs: set[str]) -> list[tuple[str, str]]:
    files = []
    for folder in sorted(helper_dirs):
        helper = PurePosixPath(folder) / HELPER_NAME if folder != "." else PurePosixPath(HELPER_NAME)
        depth = 0 if folder == "." else len(PurePosixPath(folder).parts)
        text = helper_source(depth)
        existing = root / helper
        if not existing.exists() or existing.read_text(encoding="utf-8") != text:
            files.append((str(helper), text))
    if parameters:
        env_local = _env_local_text(root, parameters)
        if env_local is not None:
            files.append((paths.ENV_LOCAL, env_local))
        declared = _declare_parameters(root, parameters)
        if declared is not None:
            files.append(declared)
        gitignore = _gitignore_text(root)
        if gitignore is not None:
            files.append((".gitignore", gitignore))
    return files


def _env_local_text(root: Path, parameters: dict[str, str]) -> str | None:
    path = root / paths.ENV_LOCAL
    existing = paths.read_env_local(path)
    missing = {name: value for name, value in parameters.items() if name not in existing}
    if not missing:
        return None
    text = path.read_text(encoding="utf-8") if path.exists() else (
        "# Machine-specific values of this project's path parameters, kept by `bundler paths --fix`.\n"
        "# Git-ignored: on another machine, set the environment variable or write this file again.\n"
    )
    if text and not text.endswith("\n"):
        text += "\n"
    return text + "".join(f"{name}={value}\n" for name, value in sorted(missing.items()))


def _declare_parameters(root: Path, parameters: dict[str, str]) -> tuple[str, str] | None:
    target = next((name for name in PARAMETER_FILES if (root / name).is_file()), PARAMETER_FILES[-1])
    path = root / target
    text = path.read_text(encoding="utf-8") if path.exists() else "{}"
    try:
        document = json.loads(text)
    except ValueError:
        return None  # an invalid config is `bundler check`'s to report; do not touch it
    if not isinstance(document, dict):
        return None
    declared = document.setdefault("paths", {})
    if not isinstance(declared, dict):
        return None
    added = False
    for name in sorted(parameters):
        if name not in declared:
            declared[name] = "${" + name + "}"
            added = True
    if not added:
        return None
    return target, json.dumps(document, indent=_json_indent(text) if path.exists() else 2, ensure_ascii=False) + "\n"


def _gitignore_text(root: Path) -> str | None:
    import fnmatch

    path = root / ".gitignore"
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    patterns = [line.strip().lstrip("/") for line in text.splitlines() if line.strip() and not line.startswith("#")]
    wanted = []
    if not any(fnmatch.fnmatch(paths.ENV_LOCAL, pattern) for pattern in patterns):
        wanted.append(paths.ENV_LOCAL)
    if not any(pattern.rstrip("/") in (".bundler", ".bundler/*") for pattern in patterns):
        wanted.append(".bundler/")
    if not wanted:
        return None
    if text and not text.endswith("\n"):
        text += "\n"
    return text + "# Kept by `bundler paths --fix`: machine-specific values and backups.\n" + "".join(f"{w}\n" for w in wanted)


def helper_source(depth: int) -> str:
    return _HELPER_TEMPLATE.replace("__DEPTH__", str(depth))


_HELPER_TEMPLATE = '''"""Machine-specific paths of this project (written by `bundler paths --fix`; safe to edit).

A parameter NAME is read, in order, from the environment variable NAME, from the
git-ignored file .env.local at the project root, and from the "paths" object of
config/pilot.json (or config/paths.json), where "${NAME}" means it has no default.
Paths inside the project are computed from the project root, wherever it was copied.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[__DEPTH__]
ENV_LOCAL = PROJECT_ROOT / ".env.local"
PARAMETER_FILES = ("config/pilot.json", "config/paths.json")
_REFERENCE = re.compile(r"\\$\\{([A-Za-z_][A-Za-z0-9_]*)\\}")


def project_path(relative: str = "") -> str:
    """An absolute path inside the project, from its root on this machine."""
    return os.path.join(str(PROJECT_ROOT), relative) if relative else str(PROJECT_ROOT)


def param(name: str) -> str:
    """The value of a path parameter: environment, then .env.local, then the declared default."""
    value = os.environ.get(name)
    if value is None:
        value = _env_local().get(name)
    if value is None:
        default = _declared().get(name)
        if default is not None and default != "${" + name + "}":
            value = default if os.path.isabs(default) else project_path(default)
    if value is None:
        raise KeyError(
            f"path parameter {name} is not set: export {name}=/path/on/this/machine "
            f"or write {name}=... in {ENV_LOCAL}"
        )
    return os.path.expanduser(os.path.expandvars(value))


def param_path(name: str, rest: str = "") -> str:
    """The parameter's folder, joined with ``rest`` (a trailing slash is kept)."""
    base = param(name)
    return base.rstrip("/\\\\") + "/" + rest.lstrip("/") if rest else base


def expand(value: str) -> str:
    """Replace each ${NAME} in a configuration value by the parameter's value."""
    return _REFERENCE.sub(lambda match: param(match.group(1)), value)


def _env_local() -> dict:
    values = {}
    if ENV_LOCAL.is_file():
        for line in ENV_LOCAL.read_text(encoding="utf-8").splitlines():
            line = line.strip()
            if line and not line.startswith("#") and "=" in line:
                name, _, value = line.partition("=")
                values[name.strip()] = value.strip().strip("\\"'")
    return values


def _declared() -> dict:
    for name in PARAMETER_FILES:
        path = PROJECT_ROOT / name
        if path.is_file():
            try:
                declared = json.loads(path.read_text(encoding="utf-8")).get("paths", {})
            except (ValueError, AttributeError):
                return {}
            return declared if isinstance(declared, dict) else {}
    return {}
'''
