"""runs/<id>/: one folder per trial, written so that a crash never leaves a half file.

Whole files are written to a temporary name and renamed; result lines are appended in
one write each and fsync'ed, so a kill leaves at most a partial last line (readers
ignore it, resume truncates it). Files get the permissions the umask allows (0644
under the usual 022): evidence is for other people to read.
"""

from __future__ import annotations

import fcntl
import json
import os
import secrets
import tempfile
from datetime import datetime, timezone
from pathlib import Path

from .contracts.runid import is_run_id
from .errors import ConfigError, RunExistsError

_UMASK = os.umask(0)
os.umask(_UMASK)
FILE_MODE = 0o666 & ~_UMASK


def new_run_id() -> str:
    """Unique and sortable: UTC time to the second, then a random suffix."""
    return datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(2)


def check_run_id(run_id: str) -> str:
    if not is_run_id(run_id):
        raise ConfigError(f"run ID {run_id!r} is not usable as a folder name.", "Use letters, digits, '.', '_' and '-' (at most 80).")
    return run_id


def create_run_dir(runs_dir: Path, run_id: str, config_sha256: str) -> Path:
    runs_dir.mkdir(parents=True, exist_ok=True)
    run_dir = runs_dir / check_run_id(run_id)
    try:
        run_dir.mkdir()
    except FileExistsError:
        recorded = str(read_manifest(run_dir).get("config_sha256", ""))
        other = (
            f" with another configuration (config hash {recorded[:12]}…, now {config_sha256[:12]}…)"
            if recorded and recorded != config_sha256
            else ""
        )
        raise RunExistsError(
            f"run {run_id} already exists in {runs_dir}{other}.",
            "Each trial gets a new ID and a changed configuration gets a new ID; leave --run-id out for a fresh one, "
            "or continue an interrupted run with --resume ID. A trial's evidence is never overwritten.",
        ) from None
    return run_dir


LOCK_FILE = ".lock"
_HELD: list[int] = []  # the lock descriptors this process holds until it exits


def refuse_if_held(run_dir: Path) -> None:
    """A run another live process is writing is refused (read-only: nothing is changed)."""
    try:
        fd = os.open(run_dir / LOCK_FILE, os.O_RDONLY)
    except OSError:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        raise _held_error(run_dir) from None
    finally:
        os.close(fd)


def hold(run_dir: Path) -> None:
    """Hold the run folder for this process (an exclusive flock on runs/<id>/.lock, which records the PID);
    the kernel lets go when the process ends, however it ends, so a stale lock never blocks a resume."""
    fd = os.open(run_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT, FILE_MODE)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        raise _held_error(run_dir) from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, (json.dumps({"pid": os.getpid(), "started": utc_now()}) + "\n").encode(), 0)
    _HELD.append(fd)


def _held_error(run_dir: Path) -> RunExistsError:
    try:
        holder = json.loads((run_dir / LOCK_FILE).read_text(encoding="utf-8"))
        who = f"PID {holder['pid']}, started {holder['started']}"
    except (OSError, ValueError, KeyError, TypeError):
        who = "another process"
    return RunExistsError(
        f"run {run_dir.name} is being written by another process ({who}).",
        "Wait for it to end (or stop it), then resume; a run folder is written by one process at a time.",
    )


def open_run_dir(runs_dir: Path, run_id: str) -> tuple[Path, dict]:
    """An existing run to resume, and its manifest."""
    run_dir = runs_dir / check_run_id(run_id)
    if not (run_dir / "manifest.json").is_file():
        raise ConfigError(
            f"no run {run_id} to resume in {runs_dir} (no manifest.json).",
            "Resume names the ID of an interrupted run; start a new one without --resume.",
        )
    manifest = read_manifest(run_dir)
    if not manifest.get("attempts"):
        raise RunExistsError(
            f"{run_dir / 'manifest.json'} is not a readable run manifest.", "The run cannot be resumed; start a new run (a new ID)."
        )
    return run_dir, manifest


def read_manifest(run_dir: Path) -> dict:
    try:
        manifest = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        return {}
    return manifest if isinstance(manifest, dict) else {}


def utc_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def write_json(path: Path, data: object) -> None:
    write_atomic(path, lambda handle: handle.write((json.dumps(data, indent=2) + "\n").encode("utf-8")))


def write_atomic(path: Path, write) -> None:
    """``write(handle)`` into a temporary file beside ``path``, synced, then renamed over it."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, FILE_MODE)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def save_checkpoint(path: Path, state: dict) -> None:
    import torch

    write_atomic(path, lambda handle: torch.save(state, handle))


def encode_line(record: dict) -> bytes:
    return (json.dumps(record, separators=(",", ":"), allow_nan=False) + "\n").encode("utf-8")


def append_line(path: Path, line: bytes) -> None:
    """One whole line per call (a single write), flushed to disk."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
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
    with open(path, "rb+") as handle:
        data = handle.read()
        keep = data.rfind(b"\n") + 1
        if keep < len(data):
            handle.truncate(keep)
            os.fsync(handle.fileno())
    return len(data) - keep
