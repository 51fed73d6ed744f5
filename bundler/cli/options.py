"""What every command shares: the --json flag, the PROJECT argument, --engine, and failure.

``handles_errors`` is the one place where a failure becomes output: one paragraph on
stderr ("Error: … Hint: …"), with --json the one JSON document on stdout (the error
and what the command found before it failed), and the error kind's exit code. An
OSError that escapes a command (a read-only folder, a full disk, a name too long) is
mapped here to a filesystem error naming the path, never a traceback.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Optional

import typer

from bundler.cli.output import write_document
from bundler.errors import BundlerError, Interrupted, from_os_error

JsonFlag = Annotated[
    bool,
    typer.Option("--json", help="Print a machine-readable result on stdout; human text goes to stderr."),
]
ProjectArg = Annotated[
    Optional[Path],
    typer.Argument(help="Project folder holding bundle.toml (default: the current folder).", show_default=False, readable=False),
]
EngineOption = Annotated[
    Optional[str],
    typer.Option(
        "--engine",
        metavar="docker|podman",
        help="The container engine (default: Podman when CONTAINER_HOST is set or DOCKER_HOST names a Podman socket, else Docker).",
        show_default=False,
    ),
]
# The Target's flags, shared by `bundler lock` and `bundler init` (one wording, one metavar).
CudaFlag = Annotated[
    Optional[str], typer.Option("--cuda", metavar="VER", help="Target the CUDA build, e.g. 12.8 (index cu128).", show_default=False)
]
RocmFlag = Annotated[
    Optional[str], typer.Option("--rocm", metavar="VER", help="Target the ROCm build, e.g. 6.4 (index rocm6.4).", show_default=False)
]
CpuFlag = Annotated[bool, typer.Option("--cpu", help="Target the CPU build.")]
TorchFlag = Annotated[
    Optional[str], typer.Option("--torch", metavar="VER", help="torch release, e.g. 2.9.1 (2.9 = its latest patch).", show_default=False)
]
PythonFlag = Annotated[
    Optional[str], typer.Option("--python", metavar="X.Y", help="Python minor version of the Target.", show_default=False)
]
PlatformFlag = Annotated[
    Optional[str],
    typer.Option(
        "--platform",
        metavar="linux/x86_64|linux/aarch64",
        help="The Target's platform (GH200/GB200 rentals are aarch64).",
        show_default=False,
    ),
]
INTERRUPTED = 130  # Ctrl-C; SIGTERM and SIGHUP exit 128 + their number (bundler/launch.py)


def fail(error: BundlerError, json_mode: bool) -> typer.Exit:
    """Say ``error`` once (stderr paragraph; the JSON document with --json); the exit to raise."""
    if json_mode:
        write_document({**(error.result or {}), "ok": False, "error": error.as_dict()})
    typer.echo(error.paragraph(), err=True)
    return typer.Exit(error.exit_code)


def handles_errors(command: Callable) -> Callable:
    """Wrap a command so that every expected failure is one paragraph and an exit code.

    The wrapped command must name its --json parameter ``json_output``, and on failure
    raise (with ``result=`` what it found) instead of printing its result itself.
    """

    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        json_mode = bool(kwargs.get("json_output"))
        try:
            return command(*args, **kwargs)
        except BundlerError as error:
            raise fail(error, json_mode) from None
        except OSError as error:
            raise fail(_os_failure(error), json_mode) from None
        except KeyboardInterrupt as interrupt:
            signal_name = f" by {interrupt}" if isinstance(interrupt, Interrupted) else ""
            print(f"Interrupted{signal_name}; what was being written was left as it was before (writes are atomic).", file=sys.stderr)
            raise typer.Exit(interrupt.exit_code if isinstance(interrupt, Interrupted) else INTERRUPTED) from None

    return wrapper


def _os_failure(error: OSError) -> BundlerError:
    return from_os_error(error)  # the engine's transport errors (requests' are OSErrors too) are EngineFailures already
