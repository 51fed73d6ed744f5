"""Failures of the pilot, each with the exit code `python -m ... pilot` returns.

    0  the run completed and its accounting holds
    2  the configuration is missing or malformed
    3  the pilot input does not match its manifest (missing, modified, duplicate, unlisted)
    4  the run's accounting does not hold (an ID lost, counted twice, or rejected unplanned)
    5  the run ID already exists (a new configuration gets a new ID), or --resume with a
       configuration or input that differs from the run's
    6  a stop rule fired (see stoprules.py): the run keeps its ID, summary.json says why
"""


class PilotError(Exception):
    exit_code = 1

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message} Hint: {self.hint}" if self.hint else self.message


class ConfigError(PilotError):
    exit_code = 2


class InputError(PilotError):
    exit_code = 3


class AccountingError(PilotError):
    exit_code = 4


class RunExistsError(PilotError):
    exit_code = 5


class StoppedError(PilotError):
    """A stop rule declared in config/pilot.json fired: the run stops and keeps its ID."""

    exit_code = 6

    def __init__(self, rule: str, reason: str, at: str) -> None:
        super().__init__(f"stop rule {rule} fired at {at}: {reason}", "The run keeps its ID and reason; fix the cause and start a new run (a changed configuration gets a new ID).")
        self.rule = rule
        self.reason = reason
        self.at = at
