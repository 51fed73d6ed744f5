"""Test-only fault injection: make the pilot die like a killed process at a chosen point.

Set PILOT_FAULT before launching the pilot (never in production):

    PILOT_FAULT=after-manifest      SIGKILL once the run folder and manifest exist
    PILOT_FAULT=after-training      SIGKILL after training, before the checkpoint is saved
    PILOT_FAULT=after-checkpoint    SIGKILL once the checkpoint is saved
    PILOT_FAULT=items:N             SIGKILL after N result lines (rejections + predictions)
    PILOT_FAULT=partial-line:N      write half of result line N+1, then SIGKILL
    PILOT_FAULT=corrupt-checkpoint  overwrite the saved checkpoint with garbage bytes

The process kills itself with SIGKILL, so nothing is flushed or cleaned up: exactly
what a dropped connection, an OOM kill or a preempted machine leaves behind.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

ENV = "PILOT_FAULT"


def _fault() -> str:
    return os.environ.get(ENV, "")


def _die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def at(point: str) -> None:
    """Die here when PILOT_FAULT names this point."""
    if _fault() == point:
        _die()


def after_items(count: int) -> None:
    """Die once ``count`` result lines have been appended when PILOT_FAULT=items:count."""
    if _fault() == f"items:{count}":
        _die()


def partial_line(count: int, path: Path, line: bytes) -> None:
    """Leave half of the next line in ``path`` and die, when PILOT_FAULT=partial-line:count."""
    if _fault() == f"partial-line:{count}":
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        os.write(fd, line[: max(1, len(line) // 2)])
        os.fsync(fd)
        os.close(fd)
        _die()


def corrupt_checkpoint(path: Path) -> None:
    if _fault() == "corrupt-checkpoint":
        path.write_bytes(b"not a checkpoint: the disk filled up half way\n")
