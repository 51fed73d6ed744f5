"""Test-only: run a generated project's pilot and make it fail like a killed process at a chosen point.

    python tests/pilot_faults.py FAULT PACKAGE [pilot arguments ...]

run from the project folder with its src/ on PYTHONPATH. FAULT is one of:

    after-manifest      SIGKILL once the run folder and its manifest exist
    after-training      SIGKILL after training, before the checkpoint is saved
    after-checkpoint    SIGKILL once the checkpoint is saved
    items:N             SIGKILL after N result lines (rejections + predictions)
    partial-line:N      write half of result line N+1, then SIGKILL
    corrupt-checkpoint  overwrite the saved checkpoint with garbage bytes (no kill)
    nan-loss:N          the model's loss at training step N is NaN (a model that diverges)
    vanish:FILE         FILE (relative to the project) disappears once the checkpoint is saved
    pause:N             sleep a minute after N result lines (a run that is still running)

Nothing of this ships with a project: the faults wrap the seams of the shipped evidence
layer from outside (store.write_json, store.save_checkpoint, store.append_line, and the
model's create() from the evidence.ModelModule contract), then the pilot runs as
`python -m PACKAGE.pilot` would. SIGKILL leaves what a dropped connection, an OOM kill or a
preempted machine leaves: nothing flushed, nothing cleaned up.
"""

from __future__ import annotations

import importlib
import os
import runpy
import signal
import sys
import time
from pathlib import Path


def die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def install(fault: str, package: str) -> None:
    store = importlib.import_module(f"{package}.evidence.store")
    kind, _, argument = fault.partition(":")
    write_json, save_checkpoint, append_line = store.write_json, store.save_checkpoint, store.append_line

    def killing_write_json(path, data):
        write_json(path, data)
        if kind == "after-manifest" and Path(path).name == "manifest.json":
            die()

    def faulty_save_checkpoint(path, state):
        if kind == "after-training":
            die()
        save_checkpoint(path, state)
        if kind == "after-checkpoint":
            die()
        if kind == "corrupt-checkpoint":
            Path(path).write_bytes(b"not a checkpoint: the disk filled up half way\n")
        if kind == "vanish":
            Path(argument).unlink()

    lines = 0

    def faulty_append_line(path, line):
        nonlocal lines
        if kind == "partial-line" and lines == int(argument):
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            os.write(fd, line[: max(1, len(line) // 2)])
            os.fsync(fd)
            die()
        append_line(path, line)
        lines += 1
        if kind == "items" and lines == int(argument):
            die()
        if kind == "pause" and lines == int(argument):
            time.sleep(60)

    store.write_json, store.save_checkpoint, store.append_line = killing_write_json, faulty_save_checkpoint, faulty_append_line
    if kind == "nan-loss":
        _diverge(importlib.import_module(f"{package}.model"), int(argument))


def _diverge(model, at_step: int) -> None:
    create = model.create

    def diverging_create(categories, parameters):
        instance = create(categories, parameters)
        fit = instance.fit
        instance.fit = lambda texts, labels, on_step: fit(
            texts, labels, lambda step, loss: on_step(step, float("nan") if step == at_step else loss)
        )
        return instance

    model.create = diverging_create


if __name__ == "__main__":
    fault, package, *arguments = sys.argv[1:]
    install(fault, package)
    sys.argv = [f"{package}.pilot", *arguments]
    runpy.run_module(f"{package}.pilot", run_name="__main__", alter_sys=True)
