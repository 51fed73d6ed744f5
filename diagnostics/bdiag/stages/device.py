"""Stage 4: the visible GPUs against the driver, the wheel's architectures and the datasheet."""

from __future__ import annotations

from bdiag.datasheet import (
    cuda_arch_support,
    data,
    driver_at_least,
    index_url,
    match_gpu,
    nvidia_driver_minimums,
    rocm_arch_base,
)
from bdiag.stages import card, received

NAME = "device"
NEEDS_TORCH = True
GIB = 1 << 30


def run(checkup, result) -> None:
    probe, torch = checkup.probe, checkup.torch
    environ = probe.environ()
    visible = environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        result.values["CUDA_VISIBLE_DEVICES"] = visible
    if not checkup.gpu:
        result.values["gpus_visible"] = probe.device_count(torch) if probe.cuda_available(torch) else 0
        received.not_compared(checkup, result, "backend cpu")
        result.skip("backend cpu: no GPU expected")
        return
    if checkup.backend == "cuda":
        _cuda_driver(checkup, result)
    else:
        result.values["amdgpu_driver"] = probe.rocm_driver_version()
        override = environ.get("HSA_OVERRIDE_GFX_VERSION")
        result.values["HSA_OVERRIDE_GFX_VERSION"] = override
    if not probe.cuda_available(torch) or probe.device_count(torch) == 0:
        flags = (
            "--gpus all (NVIDIA container toolkit)"
            if checkup.backend == "cuda"
            else "--device=/dev/kfd --device=/dev/dri --group-add video"
        )
        result.fail(
            f"torch sees no {checkup.backend} device",
            f"Start the container with {flags}; check the driver on the host (nvidia-smi / rocm-smi).",
        )
        received.compare(checkup, result, [])
        return
    arch_list = probe.arch_list(torch)
    result.values["arch_list"] = arch_list
    devices = [probe.device_properties(torch, index) for index in range(probe.device_count(torch))]
    result.values["devices"] = devices
    checkup.facts["devices"] = devices
    for info in devices:
        if checkup.backend == "cuda":
            _cuda_arch(checkup, result, info, arch_list)
        else:
            _rocm_arch(checkup, result, info, arch_list)
        _memory_vs_datasheet(checkup, result, info)
    if checkup.backend == "cuda":
        _mig_and_ecc(checkup, result, visible, devices)
    state = card.read_state(checkup, devices) if checkup.backend == "cuda" else {}
    apps = probe.compute_apps() if checkup.backend == "cuda" else []
    for info in devices:
        card.judge_busy(checkup, result, info, state.get(card.smi_uuid(info), {}), apps)
    received.compare(checkup, result, devices)
    first = devices[0]
    result.summary = f"{len(devices)} × {first['name']}, {first['total_memory'] / GIB:.0f} GiB"


def _cuda_driver(checkup, result) -> None:
    driver = checkup.probe.nvidia_driver_version()
    cuda = checkup.facts.get("torch", {}).get("cuda") or ""
    compat, toolkit = nvidia_driver_minimums(cuda)
    result.values.update(driver=driver, torch_cuda=cuda, driver_minimum=compat, driver_toolkit_minimum=toolkit)
    if driver is None:
        result.note("no NVIDIA driver version found (/proc/driver/nvidia/version, nvidia-smi)")
        return
    if compat and not driver_at_least(driver, compat):
        result.fail(
            f"driver {driver} is too old for torch built with CUDA {cuda} (needs ≥ {compat})",
            f"Rent a machine with driver ≥ {compat} (≥ {toolkit or compat} for the full toolkit), or use an older CUDA build of torch.",
        )
    elif toolkit and not driver_at_least(driver, toolkit):
        result.warn(
            f"driver {driver} runs CUDA {cuda} wheels through minor-version compatibility only (toolkit wants ≥ {toolkit})",
            "Kernels compiled just in time from PTX (and some libraries) need the full-toolkit driver.",
        )


def _cuda_arch(checkup, result, info: dict, arch_list: list) -> None:
    major, minor = info["capability"]
    entry, kind = cuda_arch_support((major, minor), arch_list)
    info["runs_via"] = entry
    if kind == "none":
        result.fail(
            f"{info['name']} is sm_{major}{minor}, which this torch build does not contain ({' '.join(arch_list) or 'empty arch list'})",
            f"'no kernel image is available' would follow: install a torch build whose arch list covers sm_{major}{minor} "
            f"(newer CUDA builds, e.g. {index_url('cuda', '12.8')} for Blackwell), and re-lock.",
        )
    elif kind == "ptx":
        result.warn(
            f"{info['name']} (sm_{major}{minor}) runs only through PTX {entry}: kernels compile just in time at first use",
            f"Expect a slow first start; prefer a build that ships sm_{major}{minor} cubins.",
        )


def _rocm_arch(checkup, result, info: dict, arch_list: list) -> None:
    arch = rocm_arch_base(info.get("gcnArchName", ""))
    override = checkup.probe.environ().get("HSA_OVERRIDE_GFX_VERSION")
    info["gfx"] = arch
    if arch not in arch_list:
        suffix = f" (HSA_OVERRIDE_GFX_VERSION={override} is set)" if override else ""
        result.fail(
            f"{info['name']} reports {arch or 'no gcnArchName'}, not in this torch build's arch list ({' '.join(arch_list)}){suffix}",
            "'HIP error: invalid device function' would follow: install a ROCm build of torch that lists it"
            + (
                ", or correct/unset HSA_OVERRIDE_GFX_VERSION (a wrong value gives HSA_STATUS_ERROR_INVALID_ISA)."
                if override
                else ", or set HSA_OVERRIDE_GFX_VERSION to the nearest listed gfx as a workaround."
            ),
        )
    elif override:
        result.warn(
            f"HSA_OVERRIDE_GFX_VERSION={override} makes the device report {arch}",
            "The override is a workaround: kernels for another gfx may misbehave; unset it when the build lists the real gfx.",
        )


def _memory_vs_datasheet(checkup, result, info: dict) -> None:
    row = match_gpu(info["name"])
    if row is None:
        result.note(f"no datasheet row for {info['name']!r} in gpus.json: memory and throughput are reported, not judged")
        return
    limits = data()["memory"]
    fraction = info["total_memory"] / 1e9 / row["memory_gb"]
    info.update(datasheet=row["name"], memory_fraction=round(fraction, 3))
    allowed = checkup.probe.environ().get("BUNDLE_ALLOW_PARTIAL_GPU") == "1"
    seen = f"{info['name']} has {info['total_memory'] / 1e9:.1f} GB of the {row['memory_gb']} GB on the datasheet"
    if fraction < limits["partial_card_fraction"]:
        message = f"{seen}: a MIG slice or partial card"
        hint = "Ask the provider for the whole card (or set BUNDLE_ALLOW_PARTIAL_GPU=1 when a slice is what you rented)."
        result.warn(message, hint) if allowed else result.fail(message, hint)
    elif fraction < limits["warn_fraction"]:
        result.warn(seen, "Some memory is reserved or missing: check `nvidia-smi -q -d MEMORY` / ECC remapping.")


def _mig_and_ecc(checkup, result, visible: str | None, devices: list) -> None:
    """MIG slices, and the memory health of every card in use (ECC, retired pages, row remapping)."""
    allowed = checkup.probe.environ().get("BUNDLE_ALLOW_PARTIAL_GPU") == "1"
    hint = "Ask for a full card, or set BUNDLE_ALLOW_PARTIAL_GPU=1 when a MIG slice is what you rented."
    if visible and any(part.strip().startswith("MIG-") for part in visible.split(",")):
        message = f"CUDA_VISIBLE_DEVICES={visible} selects a MIG slice"
        result.warn(message, hint) if allowed else result.fail(message, hint)
    rows = checkup.probe.gpu_table(list(card.HEALTH_FIELDS))
    if not rows:
        return
    result.values["nvidia_smi"] = rows
    in_use = card.rows_in_use(devices, rows, visible)
    migs = [row for _, row in in_use if str(row.get("mig.mode.current", "")).lower() == "enabled"]
    if migs:
        message = f"MIG mode is enabled on nvidia-smi GPU {', '.join(str(row.get('index')) for row in migs)}"
        result.warn(message, hint) if allowed else result.fail(message, hint)
    card.judge_health(result, in_use)
