"""The install check where a lock runs: a hashed install, `pip check`, torch's build.

One definition for the build's smoke test (in the new image) and for a venv on a host;
the diagnostics folder carries its own copy of the torch comparison (it runs without
bundler).
"""

from __future__ import annotations

import json
import shlex
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from bundler.target.bundle import Target


def torch_build_args(target: Target) -> tuple[str, ...]:
    """The arguments of ``bundler/inimage/torchbuild.py`` for the Target."""
    return ("--torch", target.torch, "--backend", target.backend, "--accelerator", target.accelerator or "")


def torch_build_program() -> str:
    """The source of ``bundler/inimage/torchbuild.py``, for an interpreter that has no bundler (``python -c``)."""
    return (Path(__file__).resolve().parents[1] / "inimage" / "torchbuild.py").read_text(encoding="utf-8")


def install_check_commands(lock: str, target, python: str = "python", pip_args: tuple[str, ...] = ()) -> list[list[str]]:
    """The three steps, as argv lists: hashed install, pip check, import torch."""
    install = [python, "-m", "pip", "install", "--require-hashes", "--no-deps", *pip_args, "-r", lock]
    return [install, [python, "-m", "pip", "check"], [python, "-c", torch_build_program(), *torch_build_args(target)]]


def install_check_command(lock: str, target, python: str = "python", pip_args: tuple[str, ...] = ()) -> str:
    """The same steps as one shell command (for a Dockerfile RUN or a remote shell)."""
    return " && ".join(shlex.join(step) for step in install_check_commands(lock, target, python, pip_args))


@dataclass
class InstallCheck:
    ok: bool
    step: str
    output: str
    torch: dict = field(default_factory=dict)


def run_install_check(
    lock: Path, target, python: str, pip_args: tuple[str, ...] = (), env: dict | None = None, timeout: int = 1800
) -> InstallCheck:
    """Run the verification steps with ``python`` (a venv's interpreter); stop at the first failure."""
    names = ("install", "pip check", "import torch")
    output, stdout = "", ""
    for name, argv in zip(names, install_check_commands(str(lock), target, python, pip_args), strict=False):
        completed = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=timeout)
        output, stdout = completed.stdout + completed.stderr, completed.stdout
        if completed.returncode != 0:
            return InstallCheck(False, name, output.strip()[-4000:])
    report = next((line for line in reversed(stdout.splitlines()) if line.startswith("{")), "{}")
    return InstallCheck(True, "done", output.strip(), json.loads(report).get("torch", {}))
