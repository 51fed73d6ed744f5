"""Shared helpers of the job tests: projects locked (once per session) for each backend, with
the order in plan.toml set per test, and the real `bundler job` command."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from tests.conftest import run_cli, scaffold_project
from tests.lock_support import lock_on_fake_index

ACCELERATORS = {"cuda": "12.8", "rocm": "6.4", "cpu": ""}
DIGEST = "sha256:" + "5" * 64
SKYPILOT_NODE_1_OF_2 = {  # what SkyPilot sets on the second of two nodes of 4 GPUs, in setup and in run
    "SKYPILOT_SETUP_NODE_IPS": "10.0.0.1\n10.0.0.2",
    "SKYPILOT_SETUP_NODE_RANK": "1",
    "SKYPILOT_NODE_IPS": "10.0.0.1\n10.0.0.2",
    "SKYPILOT_NODE_RANK": "1",
    "SKYPILOT_NUM_NODES": "2",
    "SKYPILOT_NUM_GPUS_PER_NODE": "4",
}
_LOCKED: dict[str, Path] = {}


def locked_project(tmp_path_factory, fake_index, backend: str) -> Path:
    """A scaffolded project of ``backend`` with a real lock resolved against the fake index (made once)."""
    if backend not in _LOCKED:
        root = tmp_path_factory.mktemp(f"job-{backend}")
        project = scaffold_project(
            root / "example", backend=backend, accelerator=ACCELERATORS[backend], torch_version="2.9.1", python_version="3.11"
        )
        _LOCKED[backend] = lock_on_fake_index(project, fake_index)
    return _LOCKED[backend]


def copy_project(master: Path, dest: Path, *, card: str | None = None, lots: int | None = None) -> Path:
    project = Path(shutil.copytree(master, dest))
    plan = project / "plan.toml"
    text = plan.read_text()
    if card is not None:
        text = re.sub(r'(?m)^card = "[^"]*"', f"card = {json.dumps(card)}", text)
    if lots is not None:
        text = re.sub(r"(?m)^lots = \d+", f"lots = {lots}", text)
    plan.write_text(text)
    return project


def job(project: Path, engine: str, *args: str):
    """`bundler job ENGINE PROJECT ARGS --json`: (completed process, its JSON document)."""
    completed = run_cli("job", engine, str(project), *args, "--json")
    document = json.loads(completed.stdout) if completed.stdout.strip() else None
    return completed, document


def recording_tools(folder: Path, names: tuple[str, ...], stub: str) -> tuple[Path, Path]:
    """(a bin folder of ``names``, each running ``stub`` (a Python script with ``{python}`` to fill in), the empty log they append to)."""
    import sys

    tools = folder / "bin"
    tools.mkdir(exist_ok=True)
    for name in names:
        (tools / name).write_text(stub.format(python=sys.executable))
        (tools / name).chmod(0o755)
    log = folder / "calls.jsonl"
    log.write_text("")
    return tools, log
