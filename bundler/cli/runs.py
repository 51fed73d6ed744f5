"""`bundler runs verify|export|summary|decide`: the evidence of the trials."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from bundler.cli.options import JsonFlag, ProjectArg, handles_errors
from bundler.cli.output import Output
from bundler.errors import FindingsError

runs_app = typer.Typer(help="Check, export, summarize and decide on the trials under runs/.", no_args_is_help=True)

# readable=False: an unreadable folder is reported by the command itself, naming the file (exit 10), not by click (exit 2)
RunDirArg = Annotated[
    Path, typer.Argument(help="A run folder, e.g. runs/pilot-001 (or an exported copy).", show_default=False, readable=False)
]
NoReload = Annotated[
    bool, typer.Option("--no-reload", help="Skip the checkpoint reload in a fresh process (fast, but the run is then not proven).")
]
PythonOpt = Annotated[
    Optional[str],
    typer.Option("--python", help="Interpreter with torch for the checkpoint reload (default: bundler's own).", show_default=False),
]


class Decision(str, Enum):
    launch = "launch"
    fix_env = "fix-env"
    revise_config = "revise-config"


def register(app: typer.Typer) -> None:
    app.add_typer(runs_app, name="runs")


@runs_app.command("verify")
@handles_errors
def verify_command(
    run_dir: RunDirArg,
    no_reload: NoReload = False,
    python: PythonOpt = None,
    project: Annotated[
        Optional[Path],
        typer.Option("--project", help="The run's project, for a copy outside it (default: the project the run lies in).", readable=False),
    ] = None,
    json_output: JsonFlag = False,
) -> None:
    """Prove a run is an accepted delivery; lists every problem, exit 1 if any. Never runs code from the run folder."""
    from bundler.evidence.verify import verify_run

    out = Output(json_output)
    result = verify_run(run_dir, reload=not no_reload, python=python, project=project.resolve() if project else None)
    _report(out, result)
    document = {"ok": result.accepted, **result.as_dict()}
    if not result.accepted:
        raise FindingsError(
            f"run {run_dir} is not an accepted delivery ({result.status}): {len(result.problems)} check(s) failed "
            f"({'; '.join(f'{c.name}: {c.detail}' for c in result.problems)}).",
            hint="Each failed check is named above with what it found; the run folder was not modified.",
            path=run_dir,
            result=document,
        )
    out.result(document)


@runs_app.command("export")
@handles_errors
def export_command(
    run_dir: RunDirArg,
    dest: Annotated[Path, typer.Argument(help="New folder for the copy (must not exist).", show_default=False, readable=False)],
    no_reload: NoReload = False,
    python: PythonOpt = None,
    json_output: JsonFlag = False,
) -> None:
    """Copy a run's evidence to DEST, check the copy against SHA-256 sums, then verify the copy."""
    from bundler.evidence.runs import export_run

    out = Output(json_output)
    export = export_run(run_dir, dest, reload=not no_reload, python=python)
    out.say(f"Wrote {export.checksums} ({export.files} files) and copied the run to {export.dest}; the copy matches every SHA-256.")
    for name, target in export.links.items():
        out.say(f"Kept as a link, its content not copied: {name} -> {target}", style="yellow")
    if export.withheld:
        out.say(f"Withheld as secrets (not copied): {', '.join(export.withheld)}", style="yellow")
    _report(out, export.verification)
    commands = export.as_dict()["pull_commands"]
    out.say("From a rented box (bundler there is optional):")
    out.say(f"  on the box:    {commands['checksums_on_box']}")
    out.say(f"  pull:          {commands['rsync']}")
    out.say(f"          or:    {commands['scp']}")
    out.say(f"  check a copy:  {commands['check_copy']}")
    document = {"ok": export.verification.accepted, **export.as_dict()}
    if not export.verification.accepted:
        raise FindingsError(
            f"the copy in {dest} is intact but the run is not an accepted delivery "
            f"({', '.join(c.name for c in export.verification.problems)}).",
            hint="The copy is kept as evidence; see the failed checks above.",
            path=dest,
            result=document,
        )
    out.result(document)


@runs_app.command("summary")
@handles_errors
def summary_command(
    project: ProjectArg = None, no_reload: NoReload = False, python: PythonOpt = None, json_output: JsonFlag = False
) -> None:
    """A table of the project's runs: ID, config hash, status (runs verify's verdict), counts, duration, decision."""
    from bundler.evidence.runs import collect_runs
    from bundler.evidence.runsfolder import runs_dir

    out = Output(json_output)
    project = project or Path.cwd()
    rows = collect_runs(project, reload=not no_reload, python=python)
    if not rows:
        out.say(f"No runs in {runs_dir(project)} yet.")
    else:
        out.table(
            f"Runs in {runs_dir(project)}",
            ["run", "config", "status", "accepted", "rejected", "duration", "decision"],
            [
                [
                    row.run_id,
                    row.config_sha256[:12],
                    row.status,
                    _dash(row.accepted),
                    _dash(row.rejected),
                    f"{row.seconds:.1f} s" if isinstance(row.seconds, (int, float)) else "-",
                    f"{row.decision['decision']}: {row.decision['why']}" if row.decision else "-",
                ]
                for row in rows
            ],
        )
        for row in rows:
            for reason in row.reasons:
                out.say(f"{row.run_id}: {reason}")
    out.result({"ok": True, "runs": [row.as_dict() for row in rows]})


@runs_app.command("decide")
@handles_errors
def decide_command(
    run_id: Annotated[str, typer.Argument(help="ID of the run (a folder under runs/).", show_default=False)],
    decision: Annotated[
        Decision,
        typer.Option("--decision", help="launch the planned volume, fix the environment, or revise the configuration.", show_default=False),
    ],
    why: Annotated[str, typer.Option("--why", help="The rationale, stored with the decision.", show_default=False)],
    project: Annotated[
        Optional[Path], typer.Option("--project", help="Project folder (default: the current folder).", show_default=False, readable=False)
    ] = None,
    json_output: JsonFlag = False,
) -> None:
    """Store a decision and its rationale in the run (appended; the plan is never rewritten)."""
    from bundler.evidence.runs import record_decision

    out = Output(json_output)
    entry = record_decision(project or Path.cwd(), run_id, decision.value, why)
    out.say(f"Recorded for run {run_id}: {entry['decision']} ({entry['time']}): {entry['why']}")
    if entry["decision"] == "launch" and entry["run_status"] != "accepted":
        out.say(f"Note: run {run_id} is {entry['run_status']}, not an accepted delivery: {'; '.join(entry['run_reasons'])}", style="yellow")
    out.result({"ok": True, "decision": entry})


def _report(out: Output, result) -> None:
    out.table(
        f"Checks of {result.run_dir}", ["check", "ok", "detail"], [[c.name, "yes" if c.ok else "NO", c.detail] for c in result.checks]
    )
    if result.reload_seconds is not None:
        out.say(f"Checkpoint reload in a fresh process: {result.reload_seconds:.1f} s.")
    out.say(
        "Accepted delivery." if result.accepted else f"NOT accepted: {len(result.problems)} check(s) failed.",
        style="green" if result.accepted else "red",
    )


def _dash(value) -> str:
    return "-" if value is None else str(value)
