"""Every expected failure of bundler, each with the exit code the CLI maps it to.

A message is built where the error is raised and names the offending path or value;
the hint says what to do next. The CLI (bundler/cli/options.py) prints both as one
paragraph and exits with ``exit_code`` — never a traceback for an error listed here.
An error may carry ``result``: what the command found before it failed (a check's
items, a scan's findings), printed as the one JSON document of ``--json``.

Exit codes (documented in README.md):
    0  success
    1  a check found problems (paths, check, runs verify)
    2  bad usage: an unknown or invalid value, flag or answer
    3  a project file is missing or malformed (bundle.toml, config, manifest)
    4  the target is not a combination PyTorch ships
    5  refused to overwrite something that exists (a folder, a run)
    6  the lock could not be made, is stale, or does not match its hashes
    7  no container engine answers (Docker, or Podman's service)
    8  an image build, export or push failed
    9  an index, registry or external tool could not be reached or failed
    10 a file or folder could not be read or written (permission, full disk, bad name)
    11-20  diagnostics: 10 + the number of the first failing stage
    21 a check could not look at everything it was asked to (files it could not read)
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
        result: dict | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.path = Path(path) if path is not None else None
        self.value = value
        self.result = result

    def paragraph(self) -> str:
        """The one paragraph a person reads: what happened, then what to do."""
        return f"Error: {self.message}" + (f" Hint: {self.hint}" if self.hint else "")

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
    """No container engine (Docker, or Podman's service) answers where one is needed."""

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


class FileSystemError(BundlerError):
    """A file or folder could not be read or written: permission, read-only, full disk, a bad name."""

    exit_code = 10
    kind = "filesystem"


def from_os_error(error: OSError, doing: str = "") -> FileSystemError:
    """An OSError as one paragraph naming the path, with the hint that fits its cause."""
    import errno

    error = _first_of_copy(error)
    path = error.filename
    reason = error.strerror or str(error)
    hints = {
        errno.EACCES: "Check the permissions of that path (and of the folders above it), or work in a folder you own.",
        errno.EPERM: "Check the permissions of that path (and of the folders above it), or work in a folder you own.",
        errno.EROFS: "That file system is read-only: work on a copy in a writable folder.",
        errno.ENOSPC: "The disk is full: free space there, or choose a folder on another disk.",
        errno.EDQUOT: "Your disk quota is used up: free space there, or choose a folder on another disk.",
        errno.ENAMETOOLONG: "Choose a shorter name.",
        errno.ENOTDIR: "A part of that path is a file, not a folder: choose a path whose parents are folders.",
        errno.ENOENT: "Check that the path exists (a dangling symbolic link counts as missing).",
        errno.EISDIR: "That path is a folder; name a file.",
        errno.ELOOP: "That path loops through symbolic links: resolve the links.",
        errno.EFBIG: "A file grew past what this file system or your limits allow (`ulimit -f`): free space or raise the limit.",
    }
    where = f" {path}" if path else ""
    what = f"{doing}: " if doing else ""
    return FileSystemError(
        f"{what}cannot use{where}: {reason}.",
        hint=hints.get(error.errno, "Check that path, then run the command again."),
        path=path,
    )


def _first_of_copy(error: OSError) -> OSError:
    """shutil.copytree's Error carries a list of (source, destination, text) for every file it
    could not copy; the first of them, as the OSError it was, stands for all (the rest counted)."""
    import re
    import shutil

    failures = error.args[0] if isinstance(error, shutil.Error) and error.args and isinstance(error.args[0], list) else None
    if not failures or not isinstance(failures[0], tuple) or len(failures[0]) != 3:
        return error
    source, destination, text = (str(part) for part in failures[0])
    number = re.match(r"\[Errno (\d+)\] ([^:]+)", text)
    reason = number.group(2) if number else text
    more = f" (and {len(failures) - 1} more)" if len(failures) > 1 else ""
    return OSError(int(number.group(1)) if number else None, f"copying {source} failed: {reason}{more}", destination)


class Interrupted(KeyboardInterrupt):
    """SIGINT, SIGTERM or SIGHUP while a command runs (bundler/launch.py): cleanup runs as for
    Ctrl-C, and the exit code is 128 + the signal's number."""

    def __init__(self, signum: int) -> None:
        import signal

        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


class NotCheckedError(BundlerError):
    """A check could not look at everything: files it could not read are listed, never reported clean."""

    exit_code = 21
    kind = "not-checked"


class DiagnosticsFailed(BundlerError):
    """A diagnostics stage failed; the exit code is 10 + the stage's number."""

    kind = "diagnostics"

    def __init__(self, message: str, *, stage: str, exit_code: int, hint: str | None = None, path=None, result: dict | None = None):
        super().__init__(message, hint=hint, path=path, value=stage, result=result)
        self.exit_code = exit_code
