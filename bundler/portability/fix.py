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
import json
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from bundler import tomlcompat
from bundler.fsutil import atomic_write_text
from bundler.portability import scan as paths
from bundler.portability.rewrite import IMPORT_MARKER, _rewrite_notebook, rewrite_python, rewrite_text
from bundler.portability.support import _support_files

BACKUP_DIR = ".bundler/backups"


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
    findings = list(scanner.findings_in(relative, data, category))
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
    import yaml

    suffix = PurePosixPath(relative).suffix.lower()
    try:
        if suffix in (".json", ".ipynb"):
            document = json.loads(text)
            if suffix == ".ipynb" and not (isinstance(document, dict) and isinstance(document.get("cells"), list)):
                return "no list of cells"
        elif suffix in (".yaml", ".yml"):
            list(yaml.safe_load_all(text))
        elif suffix == ".toml":
            tomlcompat.loads(text)
        elif suffix in (".py", ".pyi"):
            ast.parse(text)
    except (ValueError, SyntaxError, yaml.YAMLError) as error:  # every parser's complaint (JSON and TOML errors are ValueErrors)
        return f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}".rstrip(": ")
    return None


# --- plain text: configs, shell, Dockerfiles ---------------------------------------------


# --- Python ----------------------------------------------------------------------------


# --- notebooks -------------------------------------------------------------------------


# --- what the fixed files need: helper, parameters, .env.local, .gitignore --------------
