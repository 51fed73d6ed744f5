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


def create_run_dir(runs_dir: Path, run_id: str, config_sha256: str = "") -> Path:
    _check_id(run_id)
    runs_dir.mkdir(parents=True, exist_ok=True)
    run_dir = runs_dir / run_id
    try:
        run_dir.mkdir()
    except FileExistsError:
        recorded = read_manifest(run_dir).get("config_sha256")
        other = f" with another configuration (config hash {recorded[:12]}…, now {config_sha256[:12]}…)" if recorded and config_sha256 and recorded != config_sha256 else ""
        raise RunExistsError(
            f"run {run_id} already exists in {runs_dir}{other}.",
            "Each trial gets a new ID and a changed configuration gets a new ID; leave --run-id out for a fresh one, "
            "or continue an interrupted run with --resume ID. A trial's evidence is never overwritten.",
        ) from None
    return run_dir


def open_run_dir(runs_dir: Path, run_id: str) -> Path:
    """An existing run to resume."""
    _check_id(run_id)
    run_dir = runs_dir / run_id
    if not (run_dir / "manifest.json").is_file():
        raise ConfigError(f"no run {run_id} to resume in {runs_dir} (no manifest.json).", "Resume names the ID of an interrupted run; start a new one without --resume.")
    return run_dir


def _check_id(run_id: str) -> None:
    if not RUN_ID_RE.match(run_id):
        raise ConfigError(f"run ID {run_id!r} is not usable as a folder name.", "Use letters, digits, '.', '_' and '-' (at most 80).")


def read_manifest(run_dir: Path) -> dict:
    try:
        return json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


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


def encode_line(record: dict) -> bytes:
    return (json.dumps(record, separators=(",", ":")) + "\n").encode("utf-8")


def append_jsonl(path: Path, record: dict) -> None:
    append_line(path, encode_line(record))


def append_line(path: Path, line: bytes) -> None:
    """One whole line per call (a single write), flushed to disk: a kill leaves at most a
    partial last line without its newline, which readers ignore and resume truncates."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)
        os.fsync(fd)
    finally:
        os.close(fd)


def complete_lines(path: Path) -> list[dict]:
    """The records of a JSON Lines file, ignoring a partial last line (no newline yet)."""
    if not path.exists():
        return []
    data = path.read_bytes()
    data = data[: data.rfind(b"\n") + 1]
    return [json.loads(line) for line in data.decode("utf-8").splitlines() if line.strip()]


def drop_partial_line(path: Path) -> int:
    """Truncate a partial last line left by a kill; returns the number of bytes dropped."""
    if not path.exists():
        return 0
    size = path.stat().st_size
    with open(path, "rb+") as handle:
        data = handle.read()
        keep = data.rfind(b"\n") + 1
        if keep < size:
            handle.truncate(keep)
            handle.flush()
            os.fsync(handle.fileno())
    return size - keep


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
