"""`bundler update [PROJECT]`: the project brought up to the current template, the user's edits kept."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from bundler.cli.options import JsonFlag, ProjectArg, handles_errors
from bundler.cli.output import Output
from bundler.errors import FindingsError

SHOWN = {"yours": False}  # kinds left out of the human listing (counted instead)


def register(app: typer.Typer) -> None:
    @app.command("update")
    @handles_errors
    def update_command(
        project: ProjectArg = None,
        template: Annotated[
            Optional[Path],
            typer.Option(
                "--template", metavar="DIR", help="A template folder to update to (default: the installed template).", show_default=False
            ),
        ] = None,
        dry_run: Annotated[bool, typer.Option("--dry-run", help="Show what each file would become; write nothing.")] = False,
        json_output: JsonFlag = False,
    ) -> None:
        """Bring the project up to the current template: three-way merge per file, your edits kept, conflicts marked."""
        from bundler.scaffold.update import update

        out = Output(json_output)
        result = update(project, template=template, dry_run=dry_run)
        document = {"ok": True, "dry_run": dry_run, **result.as_dict()}
        for folder in result.put_back:
            out.say(f"An interrupted update was undone first: every file it had written put back from {folder}/.")
        if result.status == "current":
            out.say(f"{result.root} is already at template {result.new_version}: nothing to change.")
            if result.stored:
                out.say("Its render is now stored in .bundler/template-base.tar.gz (commit it): later updates merge against it.")
            out.result(document)
            return
        out.say(f"{result.root}: template {result.old_version} -> {result.new_version} (base: {_base_words(result.base_source)}).")
        if result.git_dirty:
            out.say("The git tree has uncommitted changes: they count as yours.")
        for change in result.changes:
            if SHOWN.get(change.kind, True):
                out.say(f"  {change.kind:<9} {change.path}: {change.detail}")
        kept = sum(1 for change in result.changes if change.kind == "yours")
        if kept:
            out.say(f"  {kept} file(s) you changed and the template did not: kept as they are.")
        if dry_run:
            out.say("Dry run: nothing was written.")
            out.result(document)
            return
        out.say(f"Backups of every file changed: {result.backup_dir}/ (remove it when satisfied).")
        if result.conflicts:
            names = ", ".join(change.path for change in result.conflicts)
            raise FindingsError(
                f"updated to template {result.new_version}, with conflicts marked in {len(result.conflicts)} file(s): {names}.",
                hint="Resolve each block between <<<<<<< template and >>>>>>> yours, then remove the markers (`git diff` shows them).",
                path=result.root,
                result=document,
            )
        out.say(f"Updated to template {result.new_version}.")
        out.result(document)


def _base_words(source: str) -> str:
    return "the render stored at creation" if source == "stored" else "the recorded version re-rendered"
