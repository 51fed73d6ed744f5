"""Failures of the pilot, each with the exit code `python -m <package>.pilot` returns.

0   the run completed and its accounting holds
2   config/pilot.json is missing or malformed, or the command line is (before any run folder exists)
3   the input does not match its manifest: missing, modified, unlisted, outside data_dir
4   the run's accounting does not hold (an ID lost, counted twice, or rejected unplanned)
5   the run ID exists; or --resume names a run that stopped, or whose configuration or
    input manifest changed (the run is kept as it is)
6   a stop rule fired: the run keeps its ID, summary.json says why
7   this interpreter lacks a package the model imports (torch, most often): no run folder is made
10  a file or folder could not be read or written (permission, full disk, a name too long)
"""

from __future__ import annotations


class PilotError(Exception):
    exit_code = 1

    def __init__(self, message: str, hint: str) -> None:
        super().__init__(message)
        self.message, self.hint = message, hint

    def __str__(self) -> str:
        return f"{self.message} Hint: {self.hint}"


class ConfigError(PilotError):
    exit_code = 2


class InputError(PilotError):
    exit_code = 3


class AccountingError(PilotError):
    exit_code = 4


class RunExistsError(PilotError):
    exit_code = 5


class MissingPackageError(PilotError):
    exit_code = 7


class StoppedError(PilotError):
    """A stop rule declared in config/pilot.json fired: the run stops and keeps its ID."""

    exit_code = 6

    def __init__(self, rule: str, reason: str, at: str) -> None:
        hint = "The run keeps its ID and reason; fix the cause and start a new run (a changed configuration gets a new ID)."
        super().__init__(f"stop rule {rule} fired at {at}: {reason}", hint)
        self.rule, self.reason, self.at = rule, reason, at
