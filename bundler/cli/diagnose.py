"""`bundler diagnose [--image TAG | --local] [--project PROJECT] [--keep-going] [--report FILE.html] [--engine docker|podman]`."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from bundler.cli.options import EngineOption, JsonFlag, handles_errors
from bundler.cli.output import Output
from bundler.errors import UsageError


def register(app: typer.Typer) -> None:
    @app.command("diagnose")
    @handles_errors
    def diagnose_command(
        image: Annotated[
            Optional[str], typer.Option("--image", metavar="TAG", help="Run the diagnostics inside this built image.", show_default=False)
        ] = None,
        local: Annotated[bool, typer.Option("--local", help="Run them here with the current interpreter (the default).")] = False,
        project: Annotated[
            Optional[Path],
            typer.Option("--project", help="Project folder holding bundle.toml (default: the current folder).", show_default=False),
        ] = None,
        keep_going: Annotated[bool, typer.Option("--keep-going", help="Run every stage even after a failure.")] = False,
        report: Annotated[
            Optional[Path],
            typer.Option(
                "--report", metavar="FILE.html", help="Also write the report people read: one self-contained HTML page.", show_default=False
            ),
        ] = None,
        engine: EngineOption = None,
        json_output: JsonFlag = False,
    ) -> None:
        """Staged checks (interpreter → … → collectives); exit 10 + the number of the first failing stage."""
        from bundler import diagnose
        from bundler.target.bundle import load_bundle

        if image and local:
            raise UsageError("--image and --local exclude each other.", hint="Pick one: --local runs here, --image TAG inside the image.")
        out = Output(json_output)
        bundle = load_bundle(project)
        page = diagnose.check_report_destination(report) if report else None
        if image:
            out.say(f"Running diagnostics inside {image} ({bundle.target.backend})…")
            result = diagnose.run_image(bundle, image, keep_going=keep_going, echo=sys.stderr.write, report_html=page, engine_name=engine)
        else:
            out.say(f"Running diagnostics with {sys.executable}…")
            result = diagnose.run_local(bundle, keep_going=keep_going, echo=sys.stderr.write, report_html=page)
        out.say(f"Report: {result.report_path}" + (f" and {result.report_html}" if result.report_html else ""))
        document = {
            "ok": result.exit_code == 0,
            "mode": result.mode,
            "report_path": str(result.report_path),
            "report_html": str(result.report_html) if result.report_html else None,
            "exit_code": result.exit_code,
            "notes": result.notes,
            "report": result.report,
        }
        failure = result.failure()
        if failure is not None:
            failure.result = document
            raise failure
        out.result(document)
