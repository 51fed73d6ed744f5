"""`bundler check [PROJECT]`: the portability audit, one line per item."""

from __future__ import annotations

import typer

from bundler.clitools import JsonFlag, ProjectArg, handles_errors
from bundler.output import Output


def register(app: typer.Typer) -> None:
    @app.command("check")
    @handles_errors
    def check_command(project: ProjectArg = None, json_output: JsonFlag = False) -> None:
        """Audit the project before it leaves this machine; exit 1 on any failed item."""
        from bundler.bundle import load_bundle
        from bundler.check import FAIL, run_checks

        out = Output(json_output)
        bundle = load_bundle(project)
        items = run_checks(bundle)
        for item in items:
            line = f"[{item.status:^11}] {item.name}: {item.detail}"
            out.say(line + (f"\n              hint: {item.hint}" if item.status == FAIL and item.hint else ""))
        failed = [item for item in items if item.status == FAIL]
        out.say(f"{len(items) - len(failed)} of {len(items)} items without failure." if not failed else f"{len(failed)} item(s) failed.")
        out.result({"ok": not failed, "root": str(bundle.root), "items": [item.as_dict() for item in items]})
        if failed:
            raise typer.Exit(1)
