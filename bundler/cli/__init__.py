"""The ``bundler`` command line: a thin typer app.

Each command lives in ``bundler/commands/<name>.py`` with a ``register(app)`` function;
commands import their heavy libraries (docker, cookiecutter, piptools) inside their
bodies so that ``bundler --help`` stays fast. Expected errors are turned into one
paragraph and an exit code by ``bundler.clitools.handles_errors``, in one place.
"""

from __future__ import annotations

import importlib
from typing import Annotated

import typer

from bundler import __version__

# One module per command, in the order `bundler --help` lists them.
COMMAND_MODULES = (
    "new",
    "init",
    "update",
    "lock",
    "build",
    "paths",
    "check",
    "diagnose",
    "runs",
    "run",
    "plan",
    "job",
    "compat",
    "cache",
)

app = typer.Typer(
    name="bundler",
    help="Portable GPU pilot projects: scaffold, lock, build and diagnose before paid hours are spent.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # plain click help: rich's help renderer alone costs ~0.3 s of start-up
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"bundler {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True, help="Show the version and exit.")] = False,
) -> None:
    """Portable GPU pilot projects: scaffold, lock, build and diagnose before paid hours are spent."""


def _register_commands() -> None:
    for name in COMMAND_MODULES:
        importlib.import_module(f"bundler.cli.{name}").register(app)


_register_commands()


def main() -> None:
    app()


if __name__ == "__main__":
    main()
