"""Projects prepared once per test session for the hostile cases of the evidence, answers,
numbers, schemas and filesystem classes: a fresh example project, one with a complete run,
one with a run killed after its manifest. Each case works on its own copy (a few ms).
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import sys
from pathlib import Path

from tests.conftest import run_pilot, scaffold_project
from tests.runs_support import pilot

_MADE: dict[str, Path] = {}


def _prepared(factory, kind: str) -> Path:
    if kind not in _MADE:
        project = scaffold_project(factory.mktemp(f"hostile-{kind}") / "example")
        if kind == "finished":
            assert run_pilot(project, "--run-id", "good").returncode == 0
        elif kind == "killed":
            assert pilot(project, "--run-id", "cut", fault="after-manifest").returncode == -9
        _MADE[kind] = project
    return _MADE[kind]


def project_copy(factory, kind: str, where: Path) -> Path:
    """A private copy of the prepared ``kind`` ("fresh", "finished", "killed") at ``where/example``."""
    return Path(shutil.copytree(_prepared(factory, kind), where / "example", symlinks=True))


def pilot_argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "example.pilot", "--config", "config/pilot.json", *args]


def pilot_env(project: Path) -> dict:
    return {"PYTHONPATH": str(project / "src")}


def edit_json(path: Path, change) -> None:
    document = json.loads(path.read_text())
    change(document)
    path.write_text(json.dumps(document, indent=2))


def read_only(*paths: Path) -> None:
    for path in paths:
        path.chmod(stat.S_IMODE(path.stat().st_mode) & ~0o222)


def writable_again(root: Path) -> None:
    """Give back write (and read) permission everywhere under ``root``, so pytest can clean up."""
    for folder, _, files in os.walk(root):
        os.chmod(folder, 0o755)
        for name in files:
            path = Path(folder, name)
            if not path.is_symlink():
                path.chmod(0o644)


def replace_text(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, old
    path.write_text(text.replace(old, new, 1))
