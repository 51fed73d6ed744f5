"""`bundler run [PROJECT] [--run-id ID] [--resume ID] [-- CMD …]`: any entry's run with its evidence."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from bundler.cli.options import JsonFlag, handles_errors
from bundler.cli.output import Output


def register(app: typer.Typer) -> None:
    @app.command("run")
    @handles_errors
    def run_command(
        args: Annotated[
            Optional[list[str]],
            typer.Argument(help="[PROJECT] then, after `--`, the command to run instead of [project] entry.", show_default=False),
        ] = None,
        run_id: Annotated[Optional[str], typer.Option("--run-id", help="ID of the new run (default: time and a random suffix).")] = None,
        resume: Annotated[
            Optional[str], typer.Option("--resume", help="Run the command of a killed or failed run again, in its folder.")
        ] = None,
        json_output: JsonFlag = False,
    ) -> None:
        """Run [project] entry (or CMD) into a new runs/<id>/ and record its evidence; exits with the entry's status."""
        from bundler.errors import UsageError
        from bundler.evidence.entryrun import EntryProject, run_entry
        from bundler.target.bundle import load_bundle

        project, command = _split(args or [], sys.argv)
        if run_id is not None and resume is not None:
            raise UsageError(
                "--run-id and --resume exclude each other.", hint="A resume continues the run it names; a new run gets --run-id."
            )
        out = Output(json_output)
        bundle = load_bundle(project)
        target = {key: value for key, value in bundle.target.__dict__.items()}
        entry = EntryProject(root=bundle.root, entry=bundle.entry, lock=bundle.lock, target=target, inputs=bundle.inputs)
        result = run_entry(
            entry,
            run_id=run_id,
            resume=resume,
            command=command or None,
            echo_stdout=sys.stderr.buffer if json_output else None,
        )
        for name in result.killed:
            out.say(f"Run {name} was killed (its process died without recording the end): marked killed in its manifest.", style="yellow")
        manifest = result.manifest
        how = f"signal {manifest['signal']}" if manifest.get("signal") else f"exit status {manifest.get('exit_code')}"
        out.say(
            f"Run {result.run_dir.name}: {how}; {len(manifest.get('outputs', []))} outputs recorded in {result.run_dir} "
            f"(seal {str(manifest.get('seal'))[:16]}…). Check it with: bundler runs verify {result.run_dir}",
            style="green" if result.exit_code == 0 else "red",
        )
        out.result({"ok": result.exit_code == 0, **result.as_dict()})
        if result.exit_code != 0:
            raise typer.Exit(result.exit_code)


def _split(args: list[str], argv: list[str]) -> tuple[Path | None, list[str]]:
    """PROJECT is what comes before `--`; the command what comes after it."""
    after = argv[argv.index("--") + 1 :] if "--" in argv else []  # click consumes the first `--`, passes the rest
    before = args[: len(args) - len(after)] if after and args[len(args) - len(after) :] == after else args
    if len(before) > 1:
        from bundler.errors import UsageError

        raise UsageError(
            f"more than one PROJECT given: {' '.join(before)}.", hint="Put the command after `--`: bundler run [PROJECT] -- CMD ARGS."
        )
    return (Path(before[0]) if before else None), after
