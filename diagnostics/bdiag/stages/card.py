"""The state a rented card arrives in (stages 4 and 5): busy with other work, or held back by
its host (power capped, clocks held low, PCIe link below its generation or width).

nvidia-smi is read once in stage 4 (one query for every card) and sampled during the GEMM
of stage 5; without it (ROCm, or no nvidia-smi in the image) these are reported as not
read, and the host-to-device copy measured through torch still judges the PCIe link.
"""

from __future__ import annotations

import os
import statistics

from bdiag.datasheet import data

GIB, MIB = 1 << 30, 1 << 20
STATE_FIELDS = (
    "index",
    "compute_mode",
    "utilization.gpu",
    "memory.used",
    "power.limit",
    "enforced.power.limit",
    "power.default_limit",
    "clocks.max.sm",
    "clocks.applications.graphics",
    "clocks.default_applications.graphics",
    "pcie.link.gen.max",
    "pcie.link.width.max",
)
USER_CLOCKS = 0x2  # nvmlClocksEventReasonApplicationsClocksSetting: clocks held by `nvidia-smi -ac/-lgc`
IDLE = 0x1  # nvmlClocksEventReasonGpuIdle
# ECC, retired pages and row remapping, read for every GPU the container uses.
HEALTH_FIELDS = (
    "index",
    "mig.mode.current",
    "ecc.errors.uncorrected.volatile.total",
    "retired_pages.pending",
    "remapped_rows.pending",
    "remapped_rows.failure",
)
RETURN_HINT = "Ask the provider for another machine: NVIDIA ties a failed row remap to returning the card."
RESET_HINT = "Ask the provider to reset the GPU (or reboot the host) before the work starts, or for another machine."
BUSY_HINT = (
    "Another job uses the card you rented: ask the provider for an idle machine. `nvidia-smi` lists the processes on the host "
    "(inside a container it may list none; their memory still counts)."
)


def thresholds() -> dict:
    return data()["card_state"]


def smi_uuid(info: dict) -> str | None:
    """nvidia-smi's name of a device torch reports (torch gives the UUID without nvidia-smi's 'GPU-')."""
    uuid = info.get("uuid")
    if not uuid:
        return None
    return uuid if uuid.startswith(("GPU-", "MIG-")) else f"GPU-{uuid}"


def number(text) -> float | None:
    try:
        return float(str(text).strip())
    except (TypeError, ValueError):
        return None  # "[N/A]", "[Not Supported]", absent


def read_state(checkup, devices: list) -> dict:
    """Stage 4: one nvidia-smi query for every card, kept by uuid for stage 5."""
    table = {row.get("uuid"): row for row in checkup.probe.gpu_table(list(STATE_FIELDS))}
    state = {smi_uuid(info): table[smi_uuid(info)] for info in devices if smi_uuid(info) in table}
    checkup.facts["card_state"] = state
    return state


def rows_in_use(devices: list, rows: list, visible: str | None) -> list:
    """(torch device, nvidia-smi row) for every GPU the container uses.

    torch names a card by its UUID; without one, CUDA_VISIBLE_DEVICES (indices or UUIDs)
    says which of nvidia-smi's rows the torch indices are. A device that maps to no row
    (a MIG slice) makes every row count: nvidia-smi in a container lists only its cards."""
    by_uuid = {row.get("uuid"): row for row in rows}
    chosen = [part.strip() for part in (visible or "").split(",") if part.strip()]
    pairs = []
    for position, info in enumerate(devices):
        row = by_uuid.get(smi_uuid(info))
        if row is None and position < len(chosen):
            wanted = chosen[position]
            row = next((r for r in rows if r.get("index") == wanted or str(r.get("uuid", "")).startswith(wanted)), None)
        if row is None and not chosen:
            row = next((r for r in rows if r.get("index") == str(info["index"])), None)
        if row is None:
            return [(info if len(devices) == 1 else None, each) for each in rows]
        pairs.append((info, row))
    return pairs


def judge_health(result, in_use: list) -> None:
    """Stage 4, for each (device, nvidia-smi row) of rows_in_use: uncorrected ECC errors since boot,
    pending page retirement or row remap, a failed remap."""
    for info, row in in_use:
        name = f"GPU {info['index']} ({info['name']})" if info else f"nvidia-smi GPU {row.get('index')} ({row.get('uuid')})"
        uncorrected = number(row.get("ecc.errors.uncorrected.volatile.total"))
        if uncorrected:
            result.fail(f"{name} has {uncorrected:.0f} uncorrected ECC errors since the driver loaded", RESET_HINT)
        if str(row.get("retired_pages.pending", "")).lower() in ("yes", "1"):
            result.fail(f"{name} has memory pages pending retirement (retired_pages.pending = Yes): a reset is needed", RESET_HINT)
        if str(row.get("remapped_rows.pending", "")).lower() in ("yes", "1"):
            result.fail(f"{name} has a row remap pending (remapped_rows.pending = Yes): its memory is unsafe until a reset", RESET_HINT)
        if str(row.get("remapped_rows.failure", "")).lower() in ("yes", "1"):
            result.fail(f"{name} failed a row remap (remapped_rows.failure = Yes): the card can no longer mask bad memory", RETURN_HINT)


def exclusive_cards(checkup) -> list:
    """'GPU i (Exclusive_Process)' for each card a second process cannot open while this one holds it."""
    state = checkup.facts.get("card_state") or {}
    found = []
    for info in checkup.facts.get("devices") or []:
        mode = str(state.get(smi_uuid(info), {}).get("compute_mode", "")).strip()
        if mode.startswith("Exclusive"):
            found.append(f"GPU {info['index']} ({mode})")
    return found


def exclusive_message(cards: list, what: str) -> tuple[str, str]:
    """(message, hint) for a fresh process refused by a compute mode that admits one process per card."""
    return (
        f"{what}: {', '.join(cards)} admit one process at a time and this diagnostics process already holds them",
        "The compute mode, not the card, refuses the second process: ask the provider for `nvidia-smi -c DEFAULT` (as root), "
        "or run everything that touches a card in one process.",
    )


def under_load(samples: list) -> list:
    """The samples taken while the card computed: utilization 50 % or more (or, without that column, not idle)."""
    loaded = []
    for row in samples:
        busy = number(row[6]) if len(row) > 6 else None
        if (busy is not None and busy >= 50) or (busy is None and not event_mask(row) & IDLE):
            loaded.append(row)
    return loaded


def judge_busy(checkup, result, info: dict, state: dict, apps: list) -> None:
    """Stage 4: memory or compute already taken by other processes, or a compute mode that shuts others out."""
    limits, name = thresholds(), f"GPU {info['index']} ({info['name']})"
    total, free = info.get("total_memory") or 0, info.get("free_memory")
    others = [app for app in apps if app.get("gpu_uuid") == smi_uuid(info) and app.get("pid") != os.getpid()]
    if total and free is not None:
        taken = max(0, total - free - limits["context_mib"] * MIB)
        info["used_by_others"] = taken
        listed = ", ".join(f"pid {app['pid']}: {app['used_mib']} MiB" for app in others if app.get("used_mib")) or "none listed"
        message = f"{name} has {taken / GIB:.1f} GiB of {total / GIB:.0f} GiB taken before the diagnostics allocated anything ({listed})"
        if taken >= limits["busy_memory_fail_fraction"] * total:
            result.fail(message, BUSY_HINT)
        elif taken >= limits["busy_memory_warn_fraction"] * total:
            result.warn(message, BUSY_HINT)
    utilization = number(state.get("utilization.gpu"))
    if utilization is not None:
        message = f"{name} is {utilization:.0f} % busy before the diagnostics computed anything"
        if utilization >= limits["busy_utilization_fail"]:
            result.fail(message, BUSY_HINT)
        elif utilization >= limits["busy_utilization_warn"]:
            result.warn(message, BUSY_HINT)
    mode = str(state.get("compute_mode", "")).strip()
    if mode == "Prohibited":
        prohibited = f"{name} is in compute mode Prohibited: no process may compute on it"
        result.fail(prohibited, "Ask the provider to run `nvidia-smi -c DEFAULT`.")
    elif mode.startswith("Exclusive"):
        result.warn(
            f"{name} is in compute mode {mode}: one process at a time",
            "A second process on the card (an evaluation job, a DataLoader worker touching CUDA, the fresh-process reload of stage 9) "
            "fails with 'CUDA-capable device(s) is/are busy or unavailable'; ask the provider for `nvidia-smi -c DEFAULT`.",
        )


def judge_power(result, state: dict, row: dict | None) -> None:
    """Stage 5: the enforced power limit against the card's default limit."""
    limits = [value for value in (number(state.get("power.limit")), number(state.get("enforced.power.limit"))) if value]
    default = number(state.get("power.default_limit")) or (row or {}).get("power_w")
    if not limits or not default:
        return
    limit = min(limits)
    result.values.update(power_limit_w=limit, power_default_w=default)
    table = thresholds()
    result.figure("power limit vs default", limit, default, "W", table["power_warn_fraction"], table["power_fail_fraction"])
    message = f"the board's power limit is {limit:.0f} W, below its default {default:.0f} W"
    hint = (
        "The host capped the card (`nvidia-smi -pl`): it computes slower than what was paid for; "
        f"ask the provider to restore {default:.0f} W."
    )
    if limit < table["power_fail_fraction"] * default:
        result.fail(message, hint)
    elif limit < table["power_warn_fraction"] * default:
        result.warn(message, hint)


def judge_clocks(result, state: dict, samples: list) -> None:
    """Stage 5: applications clocks set below their default, or SM clocks held by a user setting during the GEMM."""
    table = thresholds()
    hint = "Clocks are held low by a setting on the host: ask the provider to reset them (`nvidia-smi -rac` and `-rgc`, as root)."
    current, default = number(state.get("clocks.applications.graphics")), number(state.get("clocks.default_applications.graphics"))
    if state and not (current and default):
        result.note("applications clocks not answered (deprecated from driver 590): clocks judged by the SM clock under load")
    if current and default:
        result.values.update(applications_clock_mhz=current, default_applications_clock_mhz=default)
        message = f"applications clocks are set to {current:.0f} MHz, below their default {default:.0f} MHz"
        if current < table["clock_fail_fraction"] * default:
            result.fail(message, hint)
        elif current < table["clock_warn_fraction"] * default:
            result.warn(message, hint)
    held = [row for row in under_load(samples) if event_mask(row) & USER_CLOCKS]
    peak = number(state.get("clocks.max.sm"))
    clocks = [value for value in (number(row[1]) for row in held if len(row) > 1) if value]
    if held and peak and clocks:
        median = statistics.median(clocks)
        result.values.update(sm_clock_under_user_setting_mhz=median, sm_clock_max_mhz=peak)
        result.figure("SM clock during the GEMM vs max", median, peak, "MHz", table["clock_warn_fraction"], table["clock_fail_fraction"])
        message = f"SM clocks were held at {median:.0f} MHz of {peak:.0f} MHz by a user clock setting during the GEMM"
        result.fail(message, hint) if median < table["clock_fail_fraction"] * peak else result.warn(message, hint)


def event_mask(row: list) -> int:
    try:
        text = row[0].strip()
        return int(text, 16) if text.startswith("0x") else int(text)
    except (ValueError, IndexError):
        return 0
