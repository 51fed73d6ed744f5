"""`bundler new DEST`: scaffold a portable pilot project."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from bundler.cli.options import JsonFlag, handles_errors
from bundler.cli.output import Output
from bundler.errors import UsageError


def register(app: typer.Typer) -> None:
    @app.command("new")
    @handles_errors
    def new_command(
        destination: Annotated[
            str, typer.Argument(metavar="DEST", help="Folder to create (must not exist, or be empty).", show_default=False)
        ],
        backend: Annotated[Optional[str], typer.Option(help="cuda, rocm or cpu (default cpu).", show_default=False)] = None,
        name: Annotated[Optional[str], typer.Option(help="Human name of the project (default: from DEST).", show_default=False)] = None,
        set_: Annotated[
            Optional[list[str]], typer.Option("--set", metavar="KEY=VALUE", help="Set any template variable; repeatable.")
        ] = None,
        no_input: Annotated[bool, typer.Option("--no-input", help="Never prompt; use defaults and --set values.")] = False,
        json_output: JsonFlag = False,
    ) -> None:
        """Scaffold a portable pilot project: bundle.toml, lock input, config, 12 pilot documents, app, diagnostics."""
        from bundler import scaffold

        out = Output(json_output)
        dest = _destination(destination)
        settings = parse_settings(set_ or [])
        if not no_input and not json_output and sys.stdin.isatty():
            settings = _prompt(settings, backend)
        answers = scaffold.build_answers(dest, name=name, backend=backend, settings=settings)
        result = scaffold.scaffold(dest, answers)
        out.say(f"Created {result.dest} ({result.files} files) for backend {answers['backend']}.")
        folder = str(dest) if not str(dest).startswith("-") else f"./{dest}"  # `cd -x` would read an option
        out.say(f"Next: cd {shlex.quote(folder)} && PYTHONPATH=src python -m {answers['package_name']}.pilot --config config/pilot.json")
        out.result({"ok": True, "dest": str(result.dest), "files": result.files, "answers": answers})


def _destination(text: str) -> Path:
    """DEST as given; an empty one (an unset "$DEST" in a script) is refused, never read as the current folder."""
    if not text.strip():
        raise UsageError(
            "DEST is empty.",
            hint="Name the folder to create, e.g. `bundler new invoice-pilot`; to use the current (empty) folder, say `.`.",
            value=text,
        )
    return Path(text)


def parse_settings(pairs: list[str]) -> dict[str, str]:
    settings: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--set {pair!r} is not KEY=VALUE.", hint="For example --set python_version=3.12.", value=pair)
        settings[key.strip()] = value.strip()
    return settings


def _prompt(settings: dict[str, str], backend: str | None) -> dict[str, str]:
    """Ask for the main answers (answers are still validated before anything is written)."""
    from bundler.scaffold import template_defaults

    defaults = template_defaults()
    asked = dict(settings)
    for key in ("project_name", "python_version", "torch_version", "categories"):
        if key not in asked:
            asked[key] = typer.prompt(key.replace("_", " "), default=str(defaults[key]))
    if backend is None and "backend" not in asked:
        asked["backend"] = typer.prompt("backend (cuda, rocm, cpu)", default="cpu")
    return asked
