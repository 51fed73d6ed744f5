"""runs/<id>/: one folder per trial, written so that a crash never leaves a half file."""

from __future__ import annotations

import json
import os
import re
import secrets
import tempfile
from datetime import datetime, timezone
from pathlib import Path

from .errors import ConfigError, RunExistsError

RUN_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,79}$")


def new_run_id() -> str:
    """Unique and sortable: UTC time to the second, then a random suffix."""
    return datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(2)


def create_run_dir(runs_dir: Path, run_id: str) -> Path:
    if not RUN_ID_RE.match(run_id):
        raise ConfigError(f"run ID {run_id!r} is not usable as a folder name.", "Use letters, digits, '.', '_' and '-' (at most 80).")
    runs_dir.mkdir(parents=True, exist_ok=True)
    run_dir = runs_dir / run_id
    try:
        run_dir.mkdir()
    except FileExistsError:
        raise RunExistsError(
            f"run {run_id} already exists in {runs_dir}.",
            "Each trial gets a new ID; leave --run-id out for a fresh one, and never overwrite a trial's evidence.",
        ) from None
    return run_dir


def utc_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def write_json(path: Path, data: object) -> None:
    write_bytes(path, (json.dumps(data, indent=2) + "\n").encode("utf-8"))


def write_bytes(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def append_jsonl(path: Path, record: dict) -> None:
    """One whole line per call, flushed to disk: a kill leaves at most an uncounted partial line."""
    line = (json.dumps(record, separators=(",", ":")) + "\n").encode("utf-8")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)
        os.fsync(fd)
    finally:
        os.close(fd)


def save_checkpoint(path: Path, state: dict) -> None:
    import torch

    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    os.close(fd)
    try:
        torch.save(state, tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
