"""Shared helpers of the lock and build tests: a small project for a given Target."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from bundler.image.checks import torch_build_args

REPO = Path(__file__).resolve().parents[1]
HOST_PYTHON = f"{sys.version_info.major}.{sys.version_info.minor}"
BUNDLE = """\
# my comment stays
[project]
name = "Fixture"
package = "fixture"
entry = "python -m fixture"

[target]
backend = "{backend}"
accelerator = "{accelerator}"
torch = "2.9.1"
python = "{python}"
platform = "linux_x86_64"
base_image = "{base_image}"
base_digest = ""

[build]
lock = "requirements-rebuild.txt"
size_budget_mb = 3000
"""


def make_project(
    root: Path, requirements: str = "torch==2.9.1\ntorchvision\nnumpy\n", backend="cpu", accelerator="", python=HOST_PYTHON, base_image=None
) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    image = base_image or f"python:{python}-slim-bookworm"
    (root / "bundle.toml").write_text(BUNDLE.format(backend=backend, accelerator=accelerator, python=python, base_image=image))
    (root / "requirements.in").write_text(requirements)
    return root


def lock_on_fake_index(project: Path, fake_index) -> Path:
    """``bundler lock`` of ``project`` (its bundle.toml's Target) against the fake index, without retries."""
    import pytest

    from bundler.lock.run import run_lock
    from bundler.target.bundle import load_bundle

    patch = pytest.MonkeyPatch()
    patch.setenv("BUNDLER_INDEX_MAP", fake_index.index_map())
    patch.setenv("BUNDLER_PIP_RETRIES", "0")
    try:
        run_lock(load_bundle(project))
    finally:
        patch.undo()
    return project


@dataclass
class InstallCheck:
    ok: bool
    step: str
    output: str
    torch: dict = field(default_factory=dict)


def run_install_check(
    lock: Path, target, python: str, pip_args: tuple[str, ...] = (), env: dict | None = None, timeout: int = 1800
) -> InstallCheck:
    """The lock where it runs, with ``python`` (a venv's interpreter): hashed install, pip check, torch's build
    (the program the dependency checks run in an image); stops at the first failure."""
    install = [python, "-m", "pip", "install", "--require-hashes", "--no-deps", *pip_args, "-r", str(lock)]
    torch_check = [python, "-m", "bundler.inimage.torchbuild", *torch_build_args(target)]  # bundler's source on the path, as in an image
    steps = {"install": install, "pip check": [python, "-m", "pip", "check"], "import torch": torch_check}
    output, stdout = "", ""
    for name, argv in steps.items():
        step_env = {**(os.environ if env is None else env), "PYTHONPATH": str(REPO)} if argv is torch_check else env
        completed = subprocess.run(argv, capture_output=True, text=True, env=step_env, timeout=timeout)
        output, stdout = completed.stdout + completed.stderr, completed.stdout
        if completed.returncode != 0:
            return InstallCheck(False, name, output.strip()[-4000:])
    report = next((line for line in reversed(stdout.splitlines()) if line.startswith("{")), "{}")
    return InstallCheck(True, "done", output.strip(), json.loads(report).get("torch", {}))
