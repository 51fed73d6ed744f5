"""`bundler check [PROJECT]`: the portability audit, one line per item."""

from __future__ import annotations

import typer

from bundler.cli.options import JsonFlag, ProjectArg, handles_errors
from bundler.cli.output import Output
from bundler.errors import FindingsError


def register(app: typer.Typer) -> None:
    @app.command("check")
    @handles_errors
    def check_command(project: ProjectArg = None, json_output: JsonFlag = False) -> None:
        """Audit the project before it leaves this machine; exit 1 on any failed item."""
        from bundler.portability.check import FAIL, run_checks
        from bundler.target.bundle import load_bundle

        out = Output(json_output)
        bundle = load_bundle(project)
        items = run_checks(bundle)
        for item in items:
            line = f"[{item.status:^11}] {item.name}: {item.detail}"
            out.say(line + (f"\n              hint: {item.hint}" if item.status == FAIL and item.hint else ""))
        failed = [item for item in items if item.status == FAIL]
        result = {"ok": not failed, "root": str(bundle.root), "items": [item.as_dict() for item in items]}
        if failed:
            raise FindingsError(
                f"{len(failed)} of {len(items)} portability items failed in {bundle.root}: {', '.join(item.name for item in failed)}.",
                hint="Each failed item above says what to do; run `bundler check` again once they are fixed.",
                path=bundle.root,
                result=result,
            )
        out.say(f"{len(items)} of {len(items)} items without failure.")
        out.result(result)
