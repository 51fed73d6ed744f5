"""Stage 8 (io): /dev/shm and DataLoader workers; free space and speed of the results folder."""

from __future__ import annotations

import shutil
import tempfile

from bdiag.datasheet import data
from bdiag.stages import limits as container

NAME = "io"
NEEDS_TORCH = True
MIB, GIB = 1 << 20, 1 << 30


def run(checkup, result) -> None:
    limits = data()["io"]
    workers = container.configured_workers(checkup)
    _shm(checkup, result, limits)
    if result.values.get("shm_total") is not None:
        container.shm_for_workers(result, result.values["shm_total"], workers)
    _dataloader(checkup, result)
    container.cores(checkup, result, workers)
    container.open_files(checkup, result)
    _results_folder(checkup, result, limits)


def _shm(checkup, result, limits) -> None:
    stats = checkup.probe.shm_stats()
    if stats is None:
        result.values["shm"] = None
        result.fail("/dev/shm does not exist", "DataLoader workers and NCCL need it: start the container with --shm-size=8g or --ipc=host.")
        return
    result.values.update(shm_total=stats["total"], shm_free=stats["free"])
    size_mib = stats["total"] / MIB
    hint = "DataLoader workers will die with 'Bus error': start the container with --shm-size=8g (or --ipc=host)."
    if size_mib < limits["shm_fail_mib"]:
        result.fail(f"/dev/shm is only {size_mib:.0f} MiB", hint)
    elif size_mib < limits["shm_warn_mib"]:
        result.warn(f"/dev/shm is {size_mib:.0f} MiB: large batches with several workers may not fit", hint)


def _dataloader(checkup, result) -> None:
    try:
        run = checkup.probe.run_dataloader(checkup.torch, workers=2)
    except Exception as error:
        result.fail(
            f"a DataLoader with 2 workers failed: {type(error).__name__}: {str(error).splitlines()[0][:200]}",
            "Usually /dev/shm is too small or missing: --shm-size=8g or --ipc=host; else run with num_workers=0 to see the real error.",
        )
        return
    result.values["dataloader"] = run


def _results_folder(checkup, result, limits) -> None:
    folder, temporary = checkup.results_dir, False
    if folder is None:
        folder, temporary = tempfile.mkdtemp(prefix="bundle-diagnostics-"), True
        result.note(f"no project results folder: measured in the temporary folder {folder}")
    result.values["results_dir"] = folder
    try:
        scratch = checkup.probe.make_scratch(folder)
    except OSError as error:
        result.fail(
            f"the results folder {folder} is not writable: {error.strerror or error}",
            "Pass --results with a writable folder (a mounted volume), or fix its ownership; the run would fail writing there.",
        )
        return
    try:
        usage = checkup.probe.disk_usage(scratch)
        speed = checkup.probe.disk_speed(scratch, limits["probe_file_mib"])
    except OSError as error:
        result.fail(f"writing to {folder} failed: {error.strerror or error}", "Free space or pick another folder with --results.")
        return
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        if temporary:
            shutil.rmtree(folder, ignore_errors=True)
    checkup.facts["scratch_parent"] = None if temporary else folder
    free_gib = usage["free"] / GIB
    result.values.update(free_bytes=usage["free"], write_mb_s=round(speed["write_mb_s"], 1), read_mb_s=round(speed["read_mb_s"], 1))
    result.summary = f"shm {result.values.get('shm_total', 0) / GIB:.1f} GiB, {free_gib:.0f} GiB free, write {speed['write_mb_s']:.0f} MB/s"
    if free_gib < limits["free_fail_gib"]:
        result.fail(
            f"only {free_gib:.1f} GiB free in {folder}",
            "Checkpoints and outputs will not fit: free space or mount a larger volume (--results).",
        )
    elif free_gib < limits["free_warn_gib"]:
        result.warn(f"only {free_gib:.1f} GiB free in {folder}", "Check that the run's checkpoints and outputs fit.")
    if speed["write_mb_s"] < limits["write_warn_mb_s"]:
        result.warn(
            f"writes to {folder} run at {speed['write_mb_s']:.0f} MB/s",
            "Checkpoints will be slow: use local NVMe rather than a network mount.",
        )
