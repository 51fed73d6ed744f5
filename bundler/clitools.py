"""What every command shares: the --json flag, the PROJECT argument, error mapping."""

from __future__ import annotations

import functools
import json
import sys
from pathlib import Path
from typing import Annotated, Callable, Optional

import typer

from bundler.errors import BundlerError

JsonFlag = Annotated[
    bool,
    typer.Option("--json", help="Print a machine-readable result on stdout; human text goes to stderr."),
]
ProjectArg = Annotated[
    Optional[Path],
    typer.Argument(help="Project folder holding bundle.toml (default: the current folder).", show_default=False),
]


def report_error(error: BundlerError, json_mode: bool) -> None:
    """Print an expected error as one paragraph (and as JSON on stdout with --json)."""
    if json_mode:
        sys.stdout.write(json.dumps({"ok": False, "error": error.as_dict()}, indent=2) + "\n")
        sys.stdout.flush()
    paragraph = f"Error: {error.message}"
    if error.hint:
        paragraph += f" Hint: {error.hint}"
    typer.echo(paragraph, err=True)


def handles_errors(command: Callable) -> Callable:
    """Wrap a command so that a BundlerError becomes its exit code, never a traceback.

    The wrapped command must name its --json parameter ``json_output``.
    """

    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        try:
            return command(*args, **kwargs)
        except BundlerError as error:
            report_error(error, bool(kwargs.get("json_output")))
            raise typer.Exit(error.exit_code) from None

    return wrapper
