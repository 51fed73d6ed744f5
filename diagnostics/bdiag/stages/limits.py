"""Container limits against the work (stages 7 and 8): cgroup memory, CPU quota, open files, /dev/shm.

What /proc/meminfo and os.cpu_count() report is the host's; what the process may use is
what the cgroup and the rlimits allow. torch sizes its thread pool, and most code its
DataLoader workers, from the former: a limit below the work surfaces as an OOM kill, a
crawl, "Too many open files" or a worker's "Bus error" in the middle of the paid run.
"""

from __future__ import annotations

import math

from bdiag.datasheet import data

GIB, MIB = 1 << 30, 1 << 20


def limits() -> dict:
    return data()["container"]


def configured_workers(checkup) -> int | None:
    """The DataLoader workers the project's run uses ([diagnostics] dataloader_workers); None when not said."""
    bundle = checkup.bundle
    configured = bundle.diagnostics.get("dataloader_workers") if bundle is not None and not bundle.error else None
    return int(configured) if configured is not None else None


def memory(checkup, result, rss: int | None, gpu_bytes: int = 0) -> None:
    """Stage 7: the cgroup memory limit against a floor, the measured step and the GPUs' memory."""
    probe, table = checkup.probe, limits()
    limit, host = probe.cgroup_memory_limit(), probe.mem_total_bytes()
    result.values.update(cgroup_memory_limit=limit, mem_total=host)
    if limit is None:
        result.note("no cgroup memory limit: the host's memory is the limit")
        return
    need = max(table["memory_fail_gib"] * GIB, gpu_bytes)
    result.figure("memory limit vs need", limit / GIB, need / GIB, "GiB", 1.0, table["memory_fail_gib"] * GIB / need)
    shown = f"the container may use {limit / GIB:.1f} GiB" + (f" of the host's {host / GIB:.0f} GiB" if host else "")
    hint = (
        "Start the container with a larger --memory (or none); tools that size themselves from /proc/meminfo "
        f"({host / GIB:.0f} GiB here) will be OOM-killed at {limit / GIB:.1f} GiB."
        if host
        else "Start the container with a larger --memory (or none)."
    )
    if limit < table["memory_fail_gib"] * GIB:
        result.fail(f"{shown}: below the {table['memory_fail_gib']} GiB a torch process with DataLoader workers needs", hint)
    elif gpu_bytes and limit < gpu_bytes:
        result.warn(f"{shown}, less than the {gpu_bytes / GIB:.0f} GiB of the visible GPUs: a checkpoint that fills them cannot pass", hint)
    elif rss and rss > table["rss_warn_fraction"] * limit:
        result.warn(f"{shown}, and one step already peaked at {rss / GIB:.1f} GiB of resident memory", hint)
    elif limit < table["memory_warn_gib"] * GIB:
        result.warn(f"{shown}: little room for data loading and checkpoints", hint)


def cores(checkup, result, workers: int | None) -> None:
    """Stage 8: the CPUs allowed (cgroup quota, affinity) against torch's threads and the workers configured."""
    probe, table = checkup.probe, limits()
    visible, affinity, quota = probe.cpus_visible(), probe.cpus_allowed(), probe.cgroup_cpu_quota()
    allowed = min(value for value in (visible, affinity, quota) if value is not None)
    threads = probe.torch_threads(checkup.torch)
    result.values.update(cpus_visible=visible, cpus_affinity=affinity, cpu_quota=quota, cpus_allowed=allowed, torch_threads=threads)
    result.figure("CPU cores allowed vs torch threads", allowed, threads, "cores", 1.0, min(1.0, table["cores_fail"] / threads))
    spare = max(0, math.floor(allowed) - 1)
    hint = (
        f"Start the container with more CPUs (--cpus), or size the work to {allowed:g}: OMP_NUM_THREADS={max(1, math.floor(allowed))} "
        + (f"and at most {spare} DataLoader worker{'s' if spare != 1 else ''}." if spare else "and num_workers=0.")
    )
    if allowed < table["cores_fail"]:
        result.fail(f"the container may use {allowed:g} CPU core{'s' if allowed != 1 else ''}: the GPU will wait on the host", hint)
        return
    if threads > allowed + 0.01:
        result.warn(f"torch starts {threads} threads (it sees {visible} cores) but the container may use {allowed:g}", hint)
    if workers is not None and workers + 1 > allowed + 0.01:
        result.warn(f"{workers} DataLoader workers and the main process share {allowed:g} allowed cores", hint)


def open_files(checkup, result) -> None:
    """Stage 8: RLIMIT_NOFILE; DataLoader workers pass tensors as file descriptors, NCCL opens many more."""
    table = limits()
    soft, hard = checkup.probe.open_files_limit()
    result.values.update(nofile_soft=soft, nofile_hard=hard)
    if soft is not None:
        result.figure("open files allowed", soft, table["nofile_warn"], "files", 1.0, table["nofile_fail"] / table["nofile_warn"])
    raise_it = f"run `ulimit -n {hard}` before the job" if hard is None or hard >= table["nofile_warn"] else None
    hint = (
        f"DataLoader workers fail with 'Too many open files' or 'received 0 items of ancdata': {raise_it or ''}"
        + ("" if raise_it else "start the container with --ulimit nofile=65536:65536")
        + "."
    )
    if hard is not None and hard < table["nofile_fail"]:
        result.fail(f"open files are limited to {hard} (hard limit): the process cannot raise it", hint)
    elif soft is not None and soft < table["nofile_warn"]:
        result.warn(f"open files are limited to {soft} (soft limit; hard {hard if hard is not None else 'unlimited'})", hint)


def shm_for_workers(result, shm_total: int, workers: int | None) -> None:
    """Stage 8: /dev/shm against the workers configured, else the default (each keeps its prefetched batches there)."""
    workers = int(limits()["default_workers"]) if workers is None else workers
    per_worker = limits()["shm_per_worker_mib"] * MIB
    need = max(workers, 1) * per_worker
    result.values["dataloader_workers"] = workers
    floor = min(1.0, data()["io"]["shm_fail_mib"] * MIB / need)
    result.figure(f"/dev/shm vs {workers} DataLoader workers", shm_total / MIB, need / MIB, "MiB", 1.0, floor)
    if shm_total < need and result.status != "fail":
        result.warn(
            f"/dev/shm holds {shm_total / MIB:.0f} MiB for {workers} DataLoader workers configured "
            f"({per_worker // MIB} MiB each would need {need / MIB:.0f} MiB)",
            "Start the container with --shm-size=8g (or --ipc=host), or lower [diagnostics] dataloader_workers to what the run uses.",
        )
