"""Shared helpers of the runs/resume/stop-rule/plan tests: real projects, real pilot runs."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import run_pilot, scaffold_project

FAULTS = Path(__file__).with_name("pilot_faults.py")


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def snapshot(folder: Path) -> dict[str, str]:
    """SHA-256 of every file under ``folder``: proves a command modified nothing."""
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.rglob("*")) if p.is_file()}


def new_project(base: Path, name: str = "example") -> Path:
    return scaffold_project(base / name)


def pilot(project: Path, *args: str, fault: str | None = None):
    """The real pilot in a subprocess; ``fault`` runs it through tests/pilot_faults.py (test-only)."""
    if fault is None:
        return run_pilot(project, *args)
    return subprocess.run(
        [sys.executable, str(FAULTS), fault, "example", "--config", "config/pilot.json", *args],
        cwd=project,
        env={**os.environ, "PYTHONPATH": str(project / "src")},
        capture_output=True,
        text=True,
        timeout=600,
    )


def set_config(project: Path, **changes) -> None:
    path = project / "config/pilot.json"
    config = json.loads(path.read_text())
    config.update(changes)
    path.write_text(json.dumps(config, indent=2))


def change_corpus(project: Path, document: str = "doc-05") -> None:
    """A second corpus: one document changes and the input manifest records its new hash."""
    path = project / "data/pilot" / f"{document}.txt"
    path.write_text(path.read_text() + "\nPayment reminder: invoice total due within 30 days.\n")
    manifest_path = project / "data/pilot/MANIFEST.json"
    manifest = json.loads(manifest_path.read_text())
    for entry in manifest["documents"]:
        if entry["id"] == document:
            entry["sha256"] = hashlib.sha256(path.read_bytes()).hexdigest()
            entry["bytes"] = path.stat().st_size
    manifest_path.write_text(json.dumps(manifest, indent=2))


def adopted(tmp_path: Path, entry: str, bundle_extra: str = "") -> Path:
    """The smallest adopted repository: bundle.toml with an entry, a lock, a git checkout."""
    project = tmp_path / "repo"
    project.mkdir()
    (project / "bundle.toml").write_text(
        f'[project]\nname = "repo"\npackage = "repo"\nentry = {json.dumps(entry)}\n\n'
        '[target]\nbackend = "cpu"\ntorch = "2.13.0"\npython = "3.11"\n' + bundle_extra
    )
    (project / "requirements-rebuild.txt").write_text("# lock\n")
    (project / "train.py").write_text(
        "import os, pathlib, sys, time\n"
        "out = pathlib.Path(os.environ['BUNDLE_RUN_DIR'])\n"
        "(out / 'metrics.json').write_text('{\"loss\": 0.5}')\n"
        "print('trained'); sys.stdout.flush()\n"
        "time.sleep(float(os.environ.get('SLOW', '0')))\n"
    )
    for argv in (["init", "-q"], ["add", "-A"], ["-c", "user.email=a@b", "-c", "user.name=a", "commit", "-qm", "start"]):
        subprocess.run(["git", *argv], cwd=project, check=True)
    return project


def running_run(project: Path, run_id: str, seconds: float = 30) -> subprocess.Popen:
    """`bundler run --run-id RUN_ID` of train.py, once its output exists and while it sleeps ``seconds``."""
    process = subprocess.Popen(
        [sys.executable, "-m", "bundler", "run", "--run-id", run_id],
        cwd=project,
        env={**os.environ, "SLOW": str(seconds)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    wait_for(project / "runs" / run_id / "out/metrics.json")
    return process


def killed_run(project: Path, run_id: str) -> int:
    """A run whose machine went away: bundler and its entry SIGKILLed together; returns bundler's PID."""
    process = running_run(project, run_id)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=30)
    return process.pid


def wait_for(path: Path, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not path.exists():
        time.sleep(0.05)
    assert path.exists(), path
