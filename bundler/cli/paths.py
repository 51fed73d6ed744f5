"""`bundler paths [PROJECT] [--fix] [--include-generated]`: find (and rewrite) machine-specific paths."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Annotated, Optional

import typer

from bundler.cli.options import JsonFlag, handles_errors
from bundler.cli.output import Output
from bundler.errors import FindingsError, NotCheckedError, UsageError

PathsProjectArg = Annotated[
    Optional[Path],
    typer.Argument(help="Folder to scan (any folder; default: the current one).", show_default=False),
]


def register(app: typer.Typer) -> None:
    @app.command("paths")
    @handles_errors
    def paths_command(
        project: PathsProjectArg = None,
        fix: Annotated[bool, typer.Option("--fix", help="Apply the replacements (default: only report them).")] = False,
        include_generated: Annotated[
            bool,
            typer.Option("--include-generated", help="Also scan generated and tool files (build/, dist/, .idea/, Cython's C, …)."),
        ] = False,
        json_output: JsonFlag = False,
    ) -> None:
        """Find user-folder, home and temp paths; exit 1 while any remain outside the docs, 21 when a file could not be checked."""
        from bundler.portability import fix as pathfix
        from bundler.portability import scan as paths

        root = Path(project) if project is not None else Path.cwd()
        if not root.is_dir():
            raise UsageError(f"{root} is not a folder.", hint="Pass the project folder to scan.", path=root, value=str(root))
        out = Output(json_output)
        _put_back_interrupted(out, root)
        scanned = paths.scan(root, include_generated=include_generated)
        fixed = None
        if fix and scanned.failing:
            fixed = pathfix.fix(root, scan_result=scanned, include_generated=include_generated)
            scanned = paths.scan(root, include_generated=include_generated)
            pathfix.renumber(fixed, scanned)
        _report(out, scanned, fixed)
        _finish(out, scanned, fixed, fix)


def _put_back_interrupted(out: Output, root: Path) -> None:
    """A fix (or update) killed while moving files in left its journal: put those files back before looking."""
    from bundler.fsutil import put_back_unfinished

    for backups in put_back_unfinished(root):
        out.say(f"Put back the files of an interrupted fix from {backups}/: the project is as it was before it.")


def _finish(out: Output, scanned, fixed, fix: bool) -> None:
    document = _as_json(scanned, fixed)
    unchecked = f" {len(scanned.not_checked)} file(s) could not be checked (listed above)." if scanned.not_checked else ""
    if scanned.failing:
        files = len({f.file for f in scanned.failing})
        raise FindingsError(
            f"{len(scanned.failing)} machine-specific path(s) remain in {files} file(s) under {scanned.root}.{unchecked}",
            hint="Each is listed above with its replacement; `bundler paths --fix` rewrites them (backups under .bundler/backups/)."
            if not fix
            else "The ones left could not be rewritten safely (listed above with the reason): change them by hand.",
            path=scanned.root,
            result=document,
        )
    if scanned.not_checked:
        first = scanned.not_checked[0]
        raise NotCheckedError(
            f"No machine-specific path in the files checked, but {len(scanned.not_checked)} file(s) under {scanned.root} could not be "
            f"checked, first {first.file}: {first.reason}.",
            hint="Each is listed above with the reason: save text as UTF-8, repair the notebook, or check those files by hand.",
            path=scanned.root,
            result=document,
        )
    out.result(document)


def _report(out: Output, scanned, fixed) -> None:
    if fixed is not None:
        for change in fixed.changes:
            detail = f"{change.fixed} fixed" if change.status == "fixed" else change.reason
            out.say(f"{change.status:9} {change.file}: {detail}")
            for item in change.manual:
                out.say(f"          line {item['line']}: {item['text']} left as is ({item['why']})")
        if fixed.backup_dir:
            out.say(f"Backups of the changed files: {fixed.backup_dir}/ (remove it when satisfied).")
        if fixed.parameters:
            out.say(
                "Original values kept in .env.local: " + ", ".join(f"{k}={shlex.quote(v)}" for k, v in sorted(fixed.parameters.items()))
            )
    for finding in scanned.failing:
        change = f"left to you: {finding.note}" if finding.note else f"-> {finding.replacement}"
        out.say(f"{finding.file}:{finding.line}:{finding.column}: {finding.kind}: {finding.text} {change}")
    docs = [f for f in scanned.findings if f.category == "docs"]
    if docs:
        out.say(f"Documentation ({len(docs)}, never fails):")
        for finding in docs:
            out.say(f"  {finding.file}:{finding.line}:{finding.column}: {finding.text}")
    for category, title in (("remote", "On another machine (left alone)"), ("portable", "Portable per-user tool folders (fine anywhere)")):
        items = [f for f in scanned.findings if f.category == category]
        if items:
            out.say(f"{title} ({len(items)}):")
            for finding in items:
                out.say(f"  {finding.file}:{finding.line}:{finding.column}: {finding.text}")
    if scanned.skipped:
        out.say(f"Skipped ({len(scanned.skipped)}):")
        for item in scanned.skipped:
            out.say(f"  {item.file}: {item.reason}")
    if scanned.not_checked:
        out.say(f"Not checked ({len(scanned.not_checked)}):")
        for item in scanned.not_checked:
            out.say(f"  {item.file}: {item.reason}")
    if not scanned.failing and not scanned.not_checked:
        out.say(f"No machine-specific paths ({scanned.files_scanned} files scanned).")


def _as_json(scanned, fixed) -> dict:
    from bundler.portability import scan as paths

    return {
        "ok": not scanned.failing and not scanned.not_checked,
        "root": str(scanned.root),
        "files_scanned": scanned.files_scanned,
        "findings": [f.as_dict() for f in scanned.findings if f.category not in paths.INFORMATION],
        "information": [f.as_dict() for f in scanned.information],  # remote and portable: never machine-specific here
        "skipped": [s.as_dict() for s in scanned.skipped],
        "not_checked": [s.as_dict() for s in scanned.not_checked],
        "fix": None
        if fixed is None
        else {
            "changes": [c.as_dict() for c in fixed.changes],
            "parameters": fixed.parameters,
            "written": fixed.written,
            "backup_dir": fixed.backup_dir,
        },
    }
