"""`bundler compat check`: the compatibility table against what PyPI's metadata says."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from bundler.cli.options import JsonFlag, handles_errors
from bundler.cli.output import Output
from bundler.errors import FindingsError

compat_app = typer.Typer(help="The compatibility table (images/compat.toml and your rows) against PyPI.", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.add_typer(compat_app, name="compat")


@compat_app.command("check")
@handles_errors
def check_command(
    offline: Annotated[
        Optional[Path], typer.Option("--offline", metavar="FIXTURE", help="Read PyPI's metadata from a recorded fixture, not PyPI.")
    ] = None,
    record: Annotated[
        Optional[Path], typer.Option("--record", metavar="FILE", help="Also write the metadata read from PyPI to FILE (a fixture).")
    ] = None,
    json_output: JsonFlag = False,
) -> None:
    """Re-derive from PyPI's metadata what it can tell (pypi_cuda, Pythons, torchvision/torchaudio pairing, triton,
    setuptools); exit 1 on any disagreement with the table."""
    from bundler.errors import UsageError
    from bundler.lock.compatcheck import check_table

    if offline is not None and record is not None:
        raise UsageError("--offline and --record were both given.", hint="--record writes what it read from PyPI; drop one of them.")
    out = Output(json_output)
    if offline is None:
        out.say("Reading torch, torchvision and torchaudio metadata from PyPI (no wheel is downloaded) …")
    report = check_table(offline, record)
    unchecked = [f for f in report.findings if f.kind == "unchecked"]
    for finding in unchecked:
        out.say(f"  could not check: {finding.describe()}")
    for finding in report.disagreements:
        out.say(f"  disagrees: {finding.describe()}")
    summary = (
        f"{report.releases} torch releases read from {report.origin}: {len(report.disagreements)} disagreement(s) with the table, "
        f"{len(unchecked)} field(s) the metadata cannot settle."
    )
    if report.disagreements:
        raise FindingsError(summary, hint="Correct the rows named above (images/compat.toml, or your own rows).", result=report.as_dict())
    out.say(summary)
    out.result({"ok": True, **report.as_dict()})
