"""Stage 9: save a full training state, reload it in a fresh process, compare bit for bit."""

from __future__ import annotations

import os
import shutil
import tempfile

from bdiag import workloads
from bdiag.stages import card
from bdiag.stages.common import gpu_missing

NAME = "checkpoint"
NEEDS_TORCH = True
SHOWN = 5


def run(checkup, result) -> None:
    if gpu_missing(checkup, result):
        return
    torch = checkup.torch
    device = "cuda" if checkup.gpu else "cpu"
    folder, temporary = checkup.results_dir, checkup.results_dir is None
    if temporary:
        folder = tempfile.mkdtemp(prefix="bundle-diagnostics-")
    try:
        scratch = checkup.probe.make_scratch(folder)
    except OSError as error:
        result.fail(f"cannot write a checkpoint in {folder}: {error.strerror or error}", "Pass --results with a writable folder.")
        return
    try:
        _round_trip(checkup, result, torch, device, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        if temporary:
            shutil.rmtree(folder, ignore_errors=True)


def _round_trip(checkup, result, torch, device, scratch) -> None:
    objects = workloads.training_objects(device)
    progress = workloads.train_steps(objects, device)
    state = workloads.checkpoint_state(objects, progress)
    expected = workloads.digests(state)
    path = os.path.join(scratch, "checkpoint.pt")
    write_seconds = checkup.probe.save_checkpoint(torch, state, path)
    size = os.path.getsize(path)
    result.values.update(
        bytes=size,
        write_seconds=round(write_seconds, 4),
        entries=len(expected),
        contents=["model", "optimizer", "scheduler", "scaler", "rng", "progress"],
        device=device,
    )
    try:
        answer = checkup.probe.reload_checkpoint(path, device, os.path.join(scratch, "reloaded.json"))
    except Exception as error:
        exclusive = card.exclusive_cards(checkup)
        if exclusive:
            result.fail(*card.exclusive_message(exclusive, "the checkpoint cannot reload in a fresh process"))
            return
        result.fail(
            f"the checkpoint does not reload in a fresh process: {error}",
            "Check the results folder's storage and that the same torch loads it; a checkpoint that cannot be resumed costs the whole run.",
        )
        return
    read_seconds = answer["read_seconds"]
    result.values.update(
        read_seconds=round(read_seconds, 4),
        reload_pid=answer.get("pid"),
        write_mb_s=round(size / 1e6 / max(write_seconds, 1e-9), 1),
        read_mb_s=round(size / 1e6 / max(read_seconds, 1e-9), 1),
    )
    result.summary = f"{size / 1e6:.0f} MB, write {write_seconds:.2f} s, read {read_seconds:.2f} s, bit-exact"
    for label, got in (("as loaded", answer["raw"]), ("after load_state_dict", answer["restored"])):
        differing = sorted(key for key in set(expected) | set(got) if expected.get(key) != got.get(key))
        if differing:
            result.values[f"differs_{label.replace(' ', '_')}"] = differing[:50]
            result.summary = f"{len(differing)} entries differ"
            result.fail(
                f"{len(differing)} of {len(expected)} checkpoint entries differ {label} in a fresh process: {', '.join(differing[:SHOWN])}",
                "The checkpoint is not reloadable bit for bit: check the storage (corruption), and that save and load use the same torch.",
            )
            return
