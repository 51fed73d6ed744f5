"""The install check where a lock runs: a hashed install, `pip check`, torch's build.

One definition for the build's smoke test (in the new image) and for a venv on a host;
the torch comparison is contracts/buildtag.py's, which the diagnostics carry as a
generated copy (they run without bundler).
"""

from __future__ import annotations

import json
import shlex
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from bundler.contracts import buildtag


def torch_build_check(target) -> str:
    """Python code that imports torch and compares its build with the Target (exit 1 if not).

    The rule is contracts/buildtag.py's, carried in the program itself (the image has no bundler)."""
    expected = {"torch": target.torch, "backend": target.backend, "accelerator": target.accelerator}
    return (
        Path(buildtag.__file__).read_text(encoding="utf-8") + "\nimport json, sys\n"
        f"want = {json.dumps(expected)}\n"
        "import torch\n"
        "got = TorchBuild(torch.__version__, getattr(torch.version, 'cuda', None), getattr(torch.version, 'hip', None))\n"
        "problems = torch_build_problems(got, want['torch'], want['backend'], want['accelerator'])\n"
        "print(json.dumps({'torch': {'version': got.version, 'cuda': got.cuda, 'hip': got.hip}, 'problems': problems}))\n"
        "sys.exit(1 if problems else 0)\n"
    )


def install_check_commands(lock: str, target, python: str = "python", pip_args: tuple[str, ...] = ()) -> list[list[str]]:
    """The three steps, as argv lists: hashed install, pip check, import torch."""
    install = [python, "-m", "pip", "install", "--require-hashes", "--no-deps", *pip_args, "-r", lock]
    return [install, [python, "-m", "pip", "check"], [python, "-c", torch_build_check(target)]]


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
