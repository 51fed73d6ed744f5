"""The lock that lets one process at a time hold a run folder.

`runs/<id>/.lock` holds the holder's PID, its start time (the kernel's, so a reused PID is
told apart) and the host; the holder keeps an exclusive ``flock`` on it for the whole run
(the entry it starts does not inherit it, and dies with it). The kernel drops the ``flock``
when its holder is gone (a kill included): a lock file whose ``flock`` can be taken is
stale, and a run that still says "running" beside it was killed.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from bundler.errors import ExistsError

LOCK_FILE = ".lock"


@dataclass(frozen=True)
class Holder:
    pid: int | None
    started: str | None
    host: str | None

    def describe(self) -> str:
        when = f" (started {self.started})" if self.started else ""
        where = f" on {self.host}" if self.host and self.host != socket.gethostname() else ""
        return f"PID {self.pid}{when}{where}"


def process_start(pid: int) -> str | None:
    """The kernel's start time of ``pid`` (clock ticks since boot), or None."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return fields[19] if len(fields) > 19 else None


def read_holder(run_dir: Path) -> Holder | None:
    try:
        data = json.loads((run_dir / LOCK_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    pid = data.get("pid")
    return Holder(pid if isinstance(pid, int) else None, _text(data.get("started")), _text(data.get("host")))


def is_held(run_dir: Path) -> bool:
    """Whether a live process holds the run (its ``flock`` cannot be taken); nothing is changed."""
    try:
        fd = os.open(run_dir / LOCK_FILE, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)
    return False


@contextlib.contextmanager
def hold(run_dir: Path, run_id: str) -> Iterator[int]:
    """Hold ``run_dir`` for this process (yields the lock's descriptor); refused naming the holder when another live process holds it."""
    fd = os.open(run_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = read_holder(run_dir)
            raise ExistsError(
                f"run {run_id} is held by another process ({holder.describe() if holder else 'unknown holder'}): "
                f"{run_dir} is being written right now.",
                hint="Wait for that run to end (or stop it), then resume it; a run folder is written by one process at a time.",
                path=run_dir,
            ) from None
        record = {"pid": os.getpid(), "started": process_start(os.getpid()), "host": socket.gethostname()}
        os.ftruncate(fd, 0)
        os.pwrite(fd, (json.dumps(record) + "\n").encode(), 0)
        os.fsync(fd)
        yield fd
    finally:
        os.close(fd)


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None
