"""The console script's first step: signals that arrive before a command runs end it quietly.

Importing the command line takes a moment, and nothing is written in it; a Ctrl-C, SIGTERM or
SIGHUP then ends the process with 128 + the signal's number and no traceback. Once a command
runs, the same signals become ``Interrupted`` (a KeyboardInterrupt), so that every staging
folder, temporary file and transaction is cleaned up on the way out.
"""

from __future__ import annotations

import os
import signal

from bundler.errors import Interrupted

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def _leave_quietly(signum: int, _frame: object) -> None:
    os._exit(128 + signum)  # before a command starts nothing is written: nothing to clean up


def _interrupt(signum: int, _frame: object) -> None:
    raise Interrupted(signum)


def while_starting() -> None:
    for number in SIGNALS:
        signal.signal(number, _leave_quietly)


def while_running() -> None:
    for number in SIGNALS:
        signal.signal(number, _interrupt)


def main() -> None:
    while_starting()
    from bundler.cli import main as command_line

    while_running()
    command_line()
