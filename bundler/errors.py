"""Every expected failure of bundler, each with the exit code the CLI maps it to.

A message is built where the error is raised and names the offending path or value;
the hint says what to do next. The CLI (bundler/cli.py) prints both as one paragraph
and exits with ``exit_code`` — never a traceback for an error listed here.

Exit codes (documented in README.md):
    0  success
    1  a check found problems (paths, check, runs verify)
    2  bad usage: an unknown or invalid value, flag or answer
    3  a project file is missing or malformed (bundle.toml, config, manifest)
    4  the target is not a combination PyTorch ships
    5  refused to overwrite something that exists (a folder, a run)
    6  the lock could not be made, is stale, or does not match its hashes
    7  no Docker engine answers
    8  an image build, export or push failed
    9  an index, registry or external tool could not be reached or failed
    11-20  diagnostics: 10 + the number of the first failing stage
"""

from __future__ import annotations

from pathlib import Path


class BundlerError(Exception):
    """Base of every expected failure; never raised itself."""

    exit_code = 1
    kind = "error"

    def __init__(
        self,
        message: str,
        *,
        hint: str | None = None,
        path: Path | str | None = None,
        value: object = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.path = Path(path) if path is not None else None
        self.value = value

    def as_dict(self) -> dict:
        return {
            "kind": self.kind,
            "message": self.message,
            "hint": self.hint,
            "path": str(self.path) if self.path is not None else None,
            "value": self.value if isinstance(self.value, (str, int, float, bool, type(None))) else str(self.value),
            "exit_code": self.exit_code,
        }


class FindingsError(BundlerError):
    """A check ran and found problems (paths, check, runs verify)."""

    exit_code = 1
    kind = "findings"


class UsageError(BundlerError):
    """A flag, option or answer has a value bundler cannot use."""

    exit_code = 2
    kind = "usage"


class ProjectFileError(BundlerError):
    """A project file (bundle.toml, config/pilot.json, a manifest) is missing or malformed."""

    exit_code = 3
    kind = "project-file"


class TargetError(BundlerError):
    """The requested backend/accelerator/torch/Python combination does not exist."""

    exit_code = 4
    kind = "target"


class ExistsError(BundlerError):
    """The destination already exists and bundler will not overwrite it."""

    exit_code = 5
    kind = "exists"


class LockError(BundlerError):
    """Resolution failed, the lock is stale, or it does not match its hashes."""

    exit_code = 6
    kind = "lock"


class EngineError(BundlerError):
    """No Docker engine answers where one is needed."""

    exit_code = 7
    kind = "engine"


class BuildError(BundlerError):
    """An image build, export or push failed."""

    exit_code = 8
    kind = "build"


class ExternalError(BundlerError):
    """An index, registry or external tool could not be reached or failed."""

    exit_code = 9
    kind = "external"


class DiagnosticsFailed(BundlerError):
    """A diagnostics stage failed; the exit code is 10 + the stage's number."""

    kind = "diagnostics"

    def __init__(self, message: str, *, stage: str, exit_code: int, hint: str | None = None, path=None):
        super().__init__(message, hint=hint, path=path, value=stage)
        self.exit_code = exit_code
