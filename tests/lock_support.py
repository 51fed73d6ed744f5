"""Shared helpers of the lock and build tests: a small project for a given Target."""

from __future__ import annotations

import sys
from pathlib import Path

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
