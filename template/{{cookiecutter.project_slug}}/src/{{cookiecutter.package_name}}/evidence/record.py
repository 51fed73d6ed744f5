"""What a run records so that a reviewer (and `bundler runs verify`) can understand and
reproduce it: parameters, hashes, code revision, environment, reload instructions.

No absolute path is recorded: a path into a home or temporary folder does not survive a
change of machine, and `bundler runs verify` flags one.
"""

from __future__ import annotations

import hashlib
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

from .config import PilotConfig
from .inputs import manifest_sha256
from .store import utc_now

LOCK_FILE = "requirements-rebuild.txt"
# The files of a finished run whose SHA-256 the manifest records (`bundler runs verify` compares each)
HASHED_FILES = (
    "inputs.json",
    "texts.json",
    "model.py",
    "reload.py",
    "checkpoint.pt",
    "predictions.jsonl",
    "rejections.jsonl",
    "summary.json",
)
CODE_FILES = ("model.py", "reload.py")
TEXTS_FILE = "texts.json"


def new_manifest(config: PilotConfig, run_id: str, command: list[str]) -> dict:
    config_path = config.path.relative_to(config.root) if config.path.is_relative_to(config.root) else Path(config.path.name)
    return {
        "run_id": run_id,
        "status": "running",
        "started": utc_now(),
        "command": command,
        "config_path": config_path.as_posix(),
        "config": config.raw,
        "config_sha256": config.sha256,
        "input_manifest": config.raw["manifest"],
        "input_manifest_sha256": manifest_sha256(config),
        "input_copy": "inputs.json",
        "code_revision": _git_revision(config.root),
        "environment": environment(config.root),
        "reload": {
            "checkpoint": "checkpoint.pt",
            "contents": ["model", "progress", "categories", "config_sha256"],
            "code": list(CODE_FILES),
            "texts": TEXTS_FILE,
            "command": f"python runs/{run_id}/reload.py runs/{run_id}",
            "how": "torch.load(checkpoint.pt, weights_only=True); model.restore(state['model']) rebuilds the model "
            "(model.py, a copy of the project's); reload.py predicts every document of texts.json and compares "
            "them with predictions.jsonl.",
        },
        "attempts": [],
    }


def environment(root: Path) -> dict:
    import torch

    lock = root / LOCK_FILE
    return {
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "virtualenv": sys.prefix != sys.base_prefix,
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "hip": getattr(torch.version, "hip", None),
        "device": torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu",
        "platform": platform.platform(),
        "lock_sha256": hashlib.sha256(lock.read_bytes()).hexdigest() if lock.is_file() else None,
        "image_digest": os.environ.get("BUNDLE_IMAGE_DIGEST") or None,
    }


def copy_code(run_dir: Path, model_file: str) -> None:
    """The model and the reload script travel with the evidence (the umask decides who reads them)."""
    for name, source in (("model.py", Path(model_file)), ("reload.py", Path(__file__).with_name("reload.py"))):
        shutil.copyfile(source, run_dir / name)


def model_source(root: Path, model_file: str) -> str | None:
    """Where the project's model is, relative to the project: verify reloads with it, never with the run's copy."""
    path = Path(model_file).resolve()
    return path.relative_to(root.resolve()).as_posix() if path.is_relative_to(root.resolve()) else None


def file_hashes(run_dir: Path) -> dict:
    return {name: hashlib.sha256((run_dir / name).read_bytes()).hexdigest() for name in HASHED_FILES if (run_dir / name).is_file()}


def _git_revision(root: Path) -> str | None:
    try:
        result = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return result.stdout.strip() or None if result.returncode == 0 else None
