"""Stage 5: a GEMM checked against a float64 reference, then throughput against the datasheet."""

from __future__ import annotations

from bdiag.datasheet import grade, match_gpu, thresholds
from bdiag.stages import card, pcie
from bdiag.stages.common import gpu_missing

NAME = "compute"
NEEDS_TORCH = True
CHECK_SIZE = 512
TOLERANCE = {"float32": 5e-3, "bfloat16": 3e-2, "float16": 1e-2}  # relative Frobenius error; fp32 allows TF32
# Bits of nvidia-smi's clocks_event_reasons.active (NVML's nvmlClocksEventReason*) that mean
# the clocks were held below what the load asked for.
CLOCK_REASONS = {
    0x2: "applications clocks setting (clocks locked or set low)",
    0x4: "software power cap",
    0x8: "hardware slowdown",
    0x20: "software thermal slowdown",
    0x40: "hardware thermal slowdown",
    0x80: "hardware power brake",
}


def run(checkup, result) -> None:
    if gpu_missing(checkup, result):
        return
    torch = checkup.torch
    device = torch.device("cuda", 0) if checkup.gpu else torch.device("cpu")
    dtypes = [torch.float32]
    if checkup.gpu:
        dtypes.append(best_dtype(torch, checkup))
    for dtype in dtypes:
        if not _correct(checkup, result, device, dtype):
            return
    if not checkup.gpu:
        gflops = checkup.probe.cpu_gemm_gflops(torch)
        result.values.update(gemm_gflops=round(gflops, 1), datasheet="none for CPUs: judged on correctness only")
        result.summary = f"GEMM float32 {gflops:.0f} GFLOP/s (CPU)"
        return
    _throughput(checkup, result, device, dtypes[-1])


def best_dtype(torch, checkup):
    """bf16 where tensor cores take it (sm80+, MI200/MI300), fp16 otherwise."""
    devices = checkup.facts.get("devices") or []
    capability = devices[0]["capability"] if devices else [0, 0]
    if checkup.backend == "rocm" or capability[0] >= 8:
        return torch.bfloat16
    return torch.float16


def _correct(checkup, result, device, dtype) -> bool:
    torch = checkup.torch
    generator = torch.Generator().manual_seed(0)
    a = torch.randn(CHECK_SIZE, CHECK_SIZE, generator=generator, dtype=torch.float64)
    b = torch.randn(CHECK_SIZE, CHECK_SIZE, generator=generator, dtype=torch.float64)
    reference = a @ b
    got = checkup.probe.device_matmul(torch, a, b, device, dtype)
    error = float(torch.linalg.norm(got - reference) / torch.linalg.norm(reference))
    name = str(dtype).replace("torch.", "")
    result.values[f"gemm_{name}_relative_error"] = error
    if not error <= TOLERANCE[name]:  # also catches NaN
        result.fail(
            f"a {name} GEMM on {device} differs from the float64 CPU reference (relative error {error:.3g} > {TOLERANCE[name]})",
            "Wrong results from the device: the card or its driver is faulty — ask the provider for another machine.",
        )
        return False
    return True


def _throughput(checkup, result, device, dtype) -> None:
    probe, torch = checkup.probe, checkup.torch
    info = (checkup.facts.get("devices") or [{"name": torch.cuda.get_device_name(device)}])[0]
    row = match_gpu(info["name"])
    limits = thresholds(row)
    smi_id = card.smi_uuid(info)  # nvidia-smi numbers cards its own way; the uuid names the same card exactly
    samples = probe.sample_under_load(smi_id, lambda: probe.gemm_burst(torch, device, dtype)) if checkup.backend == "cuda" else []
    tflops = probe.matmul_tflops(torch, device, dtype)
    free = info.get("free_memory") or info.get("total_memory") or (4 << 30)
    nbytes = int(min(1 << 30, free // 8))
    tbs = probe.copy_bandwidth_tbs(torch, device, nbytes)
    name = str(dtype).replace("torch.", "")
    reasons, throttles = _clock_reasons(card.under_load(samples))
    result.values.update(
        gemm_dtype=name,
        gemm_tflops=round(tflops, 1),
        bandwidth_tbs=round(tbs, 3),
        clock_event_reasons=reasons,
        clock_samples={"taken": len(samples), "under_load": len(card.under_load(samples))},
        samples=samples[:40],  # probe_gpu.SAMPLED in order, kept for setting the thresholds
        thresholds=limits,
    )
    result.summary = f"GEMM {name} {tflops:.0f} TFLOP/s, copy {tbs:.2f} TB/s"
    state = (checkup.facts.get("card_state") or {}).get(smi_id, {})
    card.judge_power(result, state, row)
    card.judge_clocks(result, state, samples)
    pcie.judge_link(result, state, samples, row)
    pcie.judge_copy(result, probe.host_to_device_gb_s(torch, device), row)
    if row is None:
        result.note(f"no datasheet row for {info['name']!r}: figures reported, not judged (add a row to gpus.json)")
        return
    gemm_fraction, bandwidth_fraction = tflops / row["bf16_tflops"], tbs / row["bandwidth_tbs"]
    result.values.update(datasheet=row["name"], gemm_fraction=round(gemm_fraction, 3), bandwidth_fraction=round(bandwidth_fraction, 3))
    result.summary = (
        f"GEMM {name} {tflops:.0f} TFLOP/s ({gemm_fraction:.0%} of {row['bf16_tflops']}), copy {tbs:.2f} TB/s ({bandwidth_fraction:.0%})"
    )
    throttled = f" Clock event reasons during the GEMM: {', '.join(reasons)}." if reasons else ""
    hint = (
        f"The card is slower than its datasheet ({row['name']}).{throttled} Check `nvidia-smi -q -d PERFORMANCE,CLOCK,POWER`, "
        "other processes on the GPU, and cooling; ask the provider for another machine if it persists."
    )
    result.figure(f"GEMM {name} vs datasheet", tflops, row["bf16_tflops"], "TFLOP/s", limits["gemm_pass"], limits["gemm_warn"])
    result.figure("memory bandwidth vs datasheet", tbs, row["bandwidth_tbs"], "TB/s", limits["bandwidth_pass"], limits["bandwidth_warn"])
    for what, fraction, pass_at, warn_at in (
        ("GEMM", gemm_fraction, limits["gemm_pass"], limits["gemm_warn"]),
        ("memory bandwidth", bandwidth_fraction, limits["bandwidth_pass"], limits["bandwidth_warn"]),
    ):
        verdict = grade(fraction, pass_at, warn_at)
        message = f"{what} reached {fraction:.0%} of the datasheet (pass ≥ {pass_at:.0%}, warn ≥ {warn_at:.0%})"
        if verdict != "pass" and throttles:  # slow, and the card says why: not a matter of degree
            verdict, message = "fail", f"{message}, the clocks held down by {', '.join(throttles)}"
        if verdict == "fail":
            result.fail(message, hint)
        elif verdict == "warn":
            result.warn(message, hint)


THROTTLES = 0x8 | 0x20 | 0x40 | 0x80  # slowdowns the host or the cooling imposes (a power cap at full load is normal)


def _clock_reasons(samples: list) -> tuple[list, list]:
    """(every clock event reason seen under load, those of them that are throttles)."""
    seen = set()
    for row in samples:
        mask = card.event_mask(row)
        seen.update(bit for bit in CLOCK_REASONS if mask & bit)
    return [CLOCK_REASONS[bit] for bit in sorted(seen)], [CLOCK_REASONS[bit] for bit in sorted(seen) if bit & THROTTLES]
