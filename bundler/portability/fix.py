"""`bundler paths --fix`: rewrite machine-specific paths so the folder runs anywhere.

What a found path becomes:
- inside the project → a project-relative path, computed at run time from the project
  root (Python: ``project_path("data/x.csv")``; shell: from the script's own place);
- outside the project → a named parameter, one per folder (``DATA_ROOT``). Python reads
  it with ``param_path("DATA_ROOT", "train.csv")``, shell scripts from a guarded block
  that stops on an unset parameter, OmegaConf configs with ``${oc.env:DATA_ROOT}``,
  requirements files with ``${DATA_ROOT}`` (pip expands it).

A parameter's value comes from the environment variable, then from the git-ignored
``.env.local`` at the project root (where --fix keeps the original values, so nothing is
lost), then from the ``"paths"`` object of ``config/pilot.json`` (or ``config/paths.json``).

Nothing is written that was not proven (equivalence.py, shell.py): each rewritten file
is evaluated with every parameter set to its original value and must mean what it
meant; otherwise it is refused and reported, never written. Files that did not parse
before are said to be so. Every changed file is first copied byte for byte under
``.bundler/backups/<stamp>/``; if any write fails, every file written is put back and
the backups removed, so a failed --fix leaves the project as it was. A file without any
write permission bit is never modified. Documentation, remote commands and portable
tool folders are never rewritten.
"""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from bundler.contracts.dotenv import writable
from bundler.fsutil import replace_with_backups
from bundler.portability import scan as paths
from bundler.portability.category import run_output
from bundler.portability.classify import ENV_LOCAL, read_env_local
from bundler.portability.equivalence import omegaconf_problem, python_problem, python_unreadable
from bundler.portability.notebook import OUTPUT
from bundler.portability.python_rewrite import manual, rewrite_python
from bundler.portability.rewrite import json_unescaped, notebook_problem, rewrite_notebook, rewrite_text, textual_problem
from bundler.portability.shell import interpreter, rewrite_shell, shell_problem, with_block
from bundler.portability.support import _env_local_text, _support_files, foreign_helper

RUN_OUTPUT = (
    "captured output of a run, a record of the machine it ran on: --fix never rewrites a record;"
    " remove it from the project, or leave it out of the image (.dockerignore)"
)


NOTEBOOK_OUTPUT = (
    "in a notebook's output, a record of the run that printed it: --fix never rewrites outputs;"
    " clear them (Cell > All Output > Clear) or run the notebook again once its code is fixed"
)


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


@dataclass
class _Plan:
    """What one file becomes: its new bytes, the parameters it reads, whether it needs the Python helper."""

    change: FileChange
    text: str | None = None  # the new text
    names: set[str] = field(default_factory=set)
    helper: bool = False
    data: bytes | None = None  # the new text in the file's own encoding (set by `plan`)


def fix(
    project: Path | str | None = None, *, apply: bool = True, scan_result: paths.ScanResult | None = None, include_generated: bool = False
) -> FixResult:
    """Rewrite every failing finding of ``project``; with ``apply=False`` only plan it."""
    scanned = scan_result or paths.scan(project, include_generated=include_generated)
    root = scanned.root
    scanner = paths.make_scanner(root)
    for finding in scanned.findings:  # the names the report showed are the names written
        if finding.parameter is not None and finding.category not in ("docs", "remote", "portable"):
            scanner.registry.seed(finding.parameter, finding.value or "")
    values = {**read_env_local(root / ENV_LOCAL), **scanned.parameters}
    context = _Context(root, scanner, values, scanned)
    by_file: dict[str, list[paths.Finding]] = {}
    for finding in scanned.failing:
        by_file.setdefault(finding.file, []).append(finding)
    outcome = FixResult(root=root)
    plans = {}
    for relative in sorted(by_file):
        plan = context.plan(relative, by_file[relative])
        plan = plan if plan.change.status == "refused" else _unwritable_refused(plan, values, root)
        outcome.changes.append(plan.change)
        if plan.data is not None:
            plans[relative] = plan
    used = set().union(*(p.names for p in plans.values())) if plans else set()
    outcome.parameters = {name: values[name] for name in sorted(used) if name in values}
    if not apply or not plans:
        return outcome
    helper_dirs = {str(PurePosixPath(r).parent) for r, p in plans.items() if p.helper}
    # The helper, .env.local and .gitignore first: a file that imports the helper never lands before it.
    writes = [(r, t.encode("utf-8")) for r, t in _support_files(root, outcome.parameters, helper_dirs)] + [
        (r, p.data) for r, p in plans.items() if p.data is not None
    ]
    outcome.backup_dir, outcome.written = replace_with_backups(root, writes, "bundler paths --fix")
    return outcome


def renumber(fixed: FixResult, rescanned: paths.ScanResult) -> None:
    """Give each "left as is" item the line and column it has in the file as now written.

    The items were found before the rewrite; an inserted import or shell block moves what
    follows. The k-th item with a text in a file is the k-th finding of that text there now.
    """
    for change in fixed.changes:
        if change.status != "fixed" or not change.manual:
            continue
        now: dict[str, list[paths.Finding]] = {}
        for finding in rescanned.findings:
            if finding.file == change.file:
                now.setdefault(finding.text, []).append(finding)
        for item in change.manual:
            places = now.get(item["text"])
            if places:
                place = places.pop(0)
                item["line"], item["column"] = place.line, place.column


# A parameter the helper reads in a rewritten cell, as the notebook's JSON holds it: param_path(\"NAME\", …), or
# param_path('NAME', …) inside an f-string.
_HELPER_READ = re.compile(r"""param_path\(\s*\\*["']([A-Za-z_]\w*)\\*["']""")


def _parameters_read(text: str) -> set[str]:
    """The parameters the helper is asked for: a name in the code (``TEST_ROOT = …``) is not a parameter read."""
    return set(_HELPER_READ.findall(text))


def _unwritable_refused(plan: _Plan, values: dict[str, str], root: Path) -> _Plan:
    """``plan``, or its refusal when a parameter it reads has a value no .env.local line carries
    exactly, or when the helper it imports would replace a file of that name bundler did not write."""
    whys = [writable(name, values.get(name, "")) for name in sorted(plan.names)]
    if plan.helper:
        whys.append(foreign_helper(root, str(PurePosixPath(plan.change.file).parent)))
    why = next((why for why in whys if why is not None), None)
    return plan if why is None else _Plan(FileChange(plan.change.file, "refused", reason=f"{why}: not modified"))


class _Context:
    def __init__(self, root: Path, scanner, values: dict[str, str], scanned: paths.ScanResult) -> None:
        self.root, self.scanner, self.values, self.scanned = root, scanner, values, scanned
        existing = root / ENV_LOCAL
        self.env_local = _env_local_text(root, values, for_proof=True) or (
            existing.read_text(encoding="utf-8", errors="replace") if existing.is_file() else ""
        )

    def plan(self, relative: str, findings: list[paths.Finding]) -> _Plan:
        path = self.root / relative
        links = [f for f in findings if f.kind == "symlink-target"]
        if links:
            why = "a symlink's target: re-create the link on the other machine"
            return _Plan(FileChange(relative, "unchanged", manual=[manual(f, why) for f in links], reason="no automatic rewrite"))
        if run_output(relative):
            return _Plan(FileChange(relative, "unchanged", manual=[manual(f, RUN_OUTPUT) for f in findings], reason="no automatic rewrite"))
        try:
            status = path.stat()
            if status.st_size > paths.MAX_FILE_BYTES:  # found by a scan in parts; a rewrite would hold it whole
                why = f"larger than {paths.MAX_FILE_BYTES} bytes: bundler rewrites only files it reads whole; change it by hand"
                return _Plan(FileChange(relative, "refused", reason=f"{why}: not modified"))
            mode, data = status.st_mode, path.read_bytes()
        except OSError as error:
            return _Plan(FileChange(relative, "refused", reason=f"cannot be read: {error.strerror or error}"))
        if not mode & 0o222:  # root may write anything; a file with no write bit is a statement by its owner
            return _Plan(FileChange(relative, "refused", reason="read-only file (no write permission bit): not modified"))
        encoding = self.scanned.encodings.get(relative, "utf-8")
        text = data.decode(encoding)
        by_hand = [manual(f, f.note) for f in findings if f.note]  # a rewrite would change what the code means
        findings = [f for f in findings if not f.note]
        if not findings:
            return _Plan(FileChange(relative, "unchanged", manual=by_hand, reason="no automatic rewrite"))
        plan = self._rewrite(relative, data, text, findings)
        plan.change.manual = by_hand + plan.change.manual
        if plan.text is not None:
            plan.data = plan.text.encode(encoding)
        return plan

    def _rewrite(self, relative: str, data: bytes, text: str, findings) -> _Plan:
        suffix = PurePosixPath(relative).suffix.lower()
        if suffix == ".ipynb":
            return self._notebook(relative, text, findings)
        if suffix in paths.PYTHON_SUFFIXES:
            return self._python(relative, data, text, findings)
        shell = interpreter(relative, text)
        if shell is not None:
            return self._shell(relative, text, findings, shell)
        if suffix in paths.YAML_SUFFIXES:
            style = "omegaconf" if self._omegaconf(relative, text) else None
            return self._text(relative, text, findings, style, omegaconf_problem if style else None)
        if PurePosixPath(relative).name.lower().startswith("requirements") and suffix in (".txt", ".in"):
            return self._text(relative, text, findings, "pip", textual_problem)
        return self._text(relative, text, findings, None, None)

    def _finish(
        self, relative: str, text: str, new: str, fixed: int, left: list[dict], problem: str | None, names=(), helper=False
    ) -> _Plan:
        if problem is not None:
            return _Plan(FileChange(relative, "refused", manual=left, reason=problem))
        if new == text:
            return _Plan(FileChange(relative, "unchanged", manual=left, reason="no automatic rewrite" if left else ""))
        return _Plan(FileChange(relative, "fixed", fixed=fixed, manual=left), new, set(names), helper)

    def _python(self, relative: str, data: bytes, text: str, findings) -> _Plan:
        try:
            declared = tokenize.detect_encoding(io.BytesIO(data).readline)[0]
            data.decode(declared)  # what Python itself reads the file as: its coding cookie, or UTF-8
        except (SyntaxError, UnicodeDecodeError, LookupError):
            reason = "did not parse before the rewrite (SyntaxError: not UTF-8 and no coding declaration): not modified"
            return _Plan(FileChange(relative, "refused", reason=reason))
        unreadable = python_unreadable(text)
        if unreadable is not None:
            return _Plan(FileChange(relative, "refused", reason=f"did not parse before the rewrite ({unreadable}): not modified"))
        result = rewrite_python(text, findings)
        left = {(m["line"], m["column"]) for m in result.manual}
        names = {f.parameter for f in findings if f.parameter and (f.line, f.column) not in left}
        prefixes = [f.text[: f.prefix_length] for f in findings if f.project_relative is not None and f.prefix_length]
        problem = None if result.source == text else python_problem(text, result.source, self.values, prefixes, result.edits)
        if problem and result.import_line and "would not parse (SyntaxError at line " in problem:
            problem = _original_line(problem, result.import_line, result.import_lines)
        return self._finish(relative, text, result.source, result.fixed, result.manual, problem, names, helper=True)

    def _notebook(self, relative: str, text: str, findings) -> _Plan:
        outputs = [manual(f, NOTEBOOK_OUTPUT) for f in findings if f.kind == OUTPUT]
        if len(outputs) == len(findings):
            return _Plan(FileChange(relative, "unchanged", manual=outputs, reason="no automatic rewrite"))

        def prove(original: str, new: str, findings, edits) -> str | None:
            prefixes = [f.text[: f.prefix_length] for f in findings if f.project_relative is not None and f.prefix_length]
            return python_problem(original, new, self.values, prefixes, edits)

        new, fixed, left, helper = rewrite_notebook(text, self.scanner, relative, prove)
        left = outputs + left
        # The whole notebook as it would be written, proven again as the cells were: one proof, never skipped.
        prefixes = [json_unescaped(f.text[: f.prefix_length]) for f in findings if f.project_relative is not None and f.prefix_length]
        problem = notebook_problem(text, new, self.values, prefixes) if new != text else None
        return self._finish(relative, text, new, fixed, left, problem, _parameters_read(new) - _parameters_read(text), helper)

    def _shell(self, relative: str, text: str, findings, shell: str) -> _Plan:
        body, edits, left = rewrite_shell(text, findings)
        reads = [edit for edit in edits if not edit[4]]  # not a comment: the script reads a parameter or the root
        if not reads:
            return self._finish(relative, text, body, len(edits), left, None)
        names = sorted({f.parameter for *_, f, _ in reads if f.project_relative is None})
        new, _, _ = with_block(body, names, relative)
        problem = shell_problem(shell, relative, text, new, reads, self.env_local)
        return self._finish(relative, text, new, len(edits), left, problem, names)

    def _text(self, relative: str, text: str, findings, style, prove) -> _Plan:
        new, fixed, left = rewrite_text(text, findings, style)
        problem = prove(text, new, self.values) if prove and new != text else None
        names = {f.parameter for f in findings if f.parameter} if "${" in new else set()
        return self._finish(relative, text, new, fixed, left, problem, names)

    def _omegaconf(self, relative: str, text: str) -> bool:
        """Is this YAML loaded by OmegaConf: in a Hydra config folder, or written with OmegaConf interpolations?"""
        folder = str(PurePosixPath(relative).parent)
        if any(folder == d or folder.startswith(d.rstrip("/") + "/") for d in self.scanned.omegaconf_dirs):
            return True
        return "${oc." in text or "_target_:" in text or "${hydra:" in text


def _original_line(problem: str, import_line: int, import_lines: int) -> str:
    """A line number of the rewritten text, told as the line of the original file."""
    head, _, tail = problem.partition("SyntaxError at line ")
    number, _, rest = tail.partition(")")
    line = int(number)
    if line >= import_line + import_lines:
        line -= import_lines
    return f"{head}SyntaxError at line {line}){rest}"
