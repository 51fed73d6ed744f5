"""Bad usage of run.py (exit 2): one line naming the flag's value, with a hint, before any stage runs."""

from __future__ import annotations

import argparse
import os
import tempfile

from bdiag.checkup import BUNDLE_FILE

EXIT = 2


class Usage(Exception):
    def __init__(self, message: str, hint: str) -> None:
        super().__init__(message)
        self.message, self.hint = message, hint

    def line(self) -> str:
        return f"Error: {self.message} Hint: {self.hint}\n"


class Parser(argparse.ArgumentParser):
    """argparse, but a bad flag or value raises Usage instead of printing the usage block."""

    def error(self, message: str):
        raise Usage(f"{message}.", "`python diagnostics/run.py --help` lists the flags and their values.")


def check_project(project: str) -> None:
    """--project must be a readable folder holding bundle.toml."""
    hint = "Pass the project folder (the one holding bundle.toml), or leave --project out to look in the usual places."
    if not os.path.exists(project):
        raise Usage(f"--project {project} does not exist.", hint)
    if not os.path.isdir(project):
        raise Usage(f"--project {project} is not a folder.", hint)
    try:
        names = os.listdir(project)
    except OSError as error:
        unreadable = f"--project {project} cannot be read: {error.strerror or error}."
        raise Usage(unreadable, "Run as a user who may read it, or fix its permissions.") from None
    bundle = os.path.join(project, BUNDLE_FILE)
    if BUNDLE_FILE not in names:
        raise Usage(f"--project {project} holds no {BUNDLE_FILE}.", hint)
    if not os.path.isfile(bundle):
        raise Usage(f"--project {project}: {bundle} is not a readable file (a folder, or a link to nothing).", hint)


def check_destinations(destinations: dict) -> None:
    """Each report file (flag -> path) can be written, checked before the stages spend any time."""
    seen: dict[str, str] = {}
    for flag, path in destinations.items():
        if not path:
            continue
        full = os.path.abspath(path)
        if full in seen:
            raise Usage(f"{flag} and {seen[full]} name the same file {path}.", "Give each report its own file.")
        seen[full] = flag
        _writable(flag, path)


def _writable(flag: str, path: str) -> None:
    hint = "Pick a file in a folder you can write (the project's runs/ folder, for example)."
    if os.path.isdir(path):
        raise Usage(f"{flag} {path} is a folder, not a file.", hint)
    folder = os.path.dirname(os.path.abspath(path))
    created = []
    try:
        probe = folder
        while not os.path.exists(probe):
            created.append(probe)
            probe = os.path.dirname(probe)
        if not os.path.isdir(probe):
            raise NotADirectoryError(20, "Not a directory", probe)
        for missing in reversed(created):
            os.mkdir(missing)
        handle, scratch = tempfile.mkstemp(prefix=".diagnostics-", dir=folder)
        os.close(handle)
        os.unlink(scratch)
    except OSError as error:
        for made in created:  # innermost first; only the folders this check made
            if os.path.isdir(made):
                os.rmdir(made)
        where = f" ({error.filename})" if error.filename and error.filename != path else ""
        raise Usage(f"{flag} {path} cannot be written: {error.strerror or error}{where}.", hint) from None
