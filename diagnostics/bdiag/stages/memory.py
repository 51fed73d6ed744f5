"""Stage 7: peak memory of one representative step, and headroom against the device."""

from __future__ import annotations

import importlib
import os
import sys

from bdiag import workloads
from bdiag.datasheet import data
from bdiag.stages import limits as container
from bdiag.stages.common import gpu_missing

NAME = "memory"
NEEDS_TORCH = True
GIB = 1 << 30


def load_hook(checkup):
    """The project's step from [diagnostics] memory_hook = "pkg.module:function", else the default."""
    spec = checkup.bundle.diagnostics.get("memory_hook") if checkup.bundle and not checkup.bundle.error else None
    if not spec:
        return "default", workloads.default_step
    module_name, _, function = str(spec).partition(":")
    for folder in (os.path.join(checkup.bundle.root, "src"), checkup.bundle.root):
        if os.path.isdir(folder) and folder not in sys.path:
            sys.path.insert(0, folder)
    module = importlib.import_module(module_name)
    return spec, getattr(module, function or "diagnostics_step")


def run(checkup, result) -> None:
    if gpu_missing(checkup, result):
        return
    try:
        source, step = load_hook(checkup)
    except Exception as error:
        result.fail(
            f"the memory hook {checkup.bundle.diagnostics.get('memory_hook')!r} does not load: {type(error).__name__}: {error}",
            'Set [diagnostics] memory_hook = "package.module:function" to a function taking a torch.device.',
        )
        return
    result.values["step"] = source
    if not checkup.gpu:
        _cpu(checkup, result, step, source)
        return
    torch = checkup.torch
    device = torch.device("cuda", 0)
    try:
        measured = checkup.probe.peak_memory(torch, device, step)
    except Exception as error:
        if "out of memory" in str(error).lower():
            result.fail(
                f"one step of {source} ran out of device memory: {str(error).splitlines()[0][:200]}",
                "Lower the batch size or sequence length (or use gradient checkpointing / a bigger card) before the full run.",
            )
            return
        raise
    peak, total = max(measured["peak_reserved"], measured["peak_allocated"]), measured["total"]
    headroom = 1 - peak / total
    result.values.update(
        peak_allocated=measured["peak_allocated"],
        peak_reserved=measured["peak_reserved"],
        total=total,
        headroom_fraction=round(headroom, 3),
        **{f"step_{k}": v for k, v in measured["extra"].items()},
    )
    result.summary = f"peak {peak / GIB:.1f} of {total / GIB:.0f} GiB ({headroom:.0%} free)"
    warn_at = data()["memory"]["headroom_warn_fraction"]
    result.figure("device memory free at the step's peak", (total - peak) / GIB, total / GIB, "GiB", warn_at, 0.0)
    if headroom < 0:
        result.fail(
            f"the step needs {peak / GIB:.1f} GiB, the device has {total / GIB:.1f} GiB",
            "Lower the batch size or sequence length before the full run.",
        )
    elif headroom < warn_at:
        result.warn(
            f"only {headroom:.0%} of device memory is left at the step's peak",
            "Longer inputs or fragmentation may run out of memory: lower the batch size or set "
            "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True.",
        )
    gpu_bytes = sum(info.get("total_memory", 0) for info in checkup.facts.get("devices") or [])
    container.memory(checkup, result, checkup.probe.max_rss_bytes(), gpu_bytes)


def _cpu(checkup, result, step, source) -> None:
    """No device memory to judge on CPU: the step must still run; RSS reported, not judged."""
    try:
        extra = step(checkup.torch.device("cpu")) if source != "default" else workloads.default_step("cpu", width=512, batch=32)
    except Exception as error:
        result.fail(f"one step of {source} failed on CPU: {type(error).__name__}: {error}", "Fix the step before the full run.")
        return
    available = checkup.probe.mem_available_bytes()
    step = {f"step_{k}": v for k, v in (extra or {}).items()}
    result.values.update(max_rss=checkup.probe.max_rss_bytes(), mem_available=available, **step)
    container.memory(checkup, result, result.values["max_rss"])
    result.skip("backend cpu: no device memory to measure (the step ran; process RSS reported)")
    result.summary = f"RSS {result.values['max_rss'] / GIB:.1f} GiB"
