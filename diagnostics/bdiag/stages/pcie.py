"""The PCIe link between host and card (stage 5): the generation and width it trained at under
load against what the card is built for, and a pinned host-to-device copy against that link.

A Gen5 x16 card in a slot or riser that trained at Gen3 or x8 copies batches, weights and
checkpoints at a fraction of the speed paid for; the link only trains up under load, so
it is read from the samples taken during the GEMM.
"""

from __future__ import annotations

from bdiag.stages.card import number, thresholds, under_load

GT_PER_LANE = {1: 2.5, 2: 5.0, 3: 8.0, 4: 16.0, 5: 32.0, 6: 64.0}
HINT = (
    "Host-to-device copies (batches, weights, checkpoints) will be slow: ask the provider to reseat the card or move it to a full "
    "Gen{gen} x{width} slot (no riser, no bifurcation), or for another machine; a process on the far NUMA node or an IOMMU in the "
    "path slows copies too."
)


def link_gb_s(gen: int, width: int) -> float:
    """One direction of a PCIe link in GB/s (8b/10b encoding up to Gen2, 128b/130b from Gen3)."""
    encoding = 0.8 if gen <= 2 else 128 / 130
    return GT_PER_LANE.get(gen, 0.0) * width * encoding / 8


def _sampled(samples: list, column: int) -> int | None:
    values = [number(row[column]) for row in samples if len(row) > column]
    values = [int(value) for value in values if value]
    return max(values) if values else None


def judge_link(result, state: dict, samples: list, row: dict | None) -> None:
    if row is None or "pcie" not in row:
        return
    built = (row["pcie"]["gen"], row["pcie"]["width"])
    loaded = under_load(samples)  # an idle card downtrains its link: only a link under load is judged
    now = (_sampled(loaded, 4), _sampled(loaded, 5))
    most = (number(state.get("pcie.link.gen.max")), number(state.get("pcie.link.width.max")))
    if None in now:
        why = "no nvidia-smi sample under load" if samples else "no nvidia-smi samples"
        result.note(f"PCIe link not read ({why}): judged by the host-to-device copy alone")
        return
    fraction = link_gb_s(*now) / link_gb_s(*built)
    result.values["pcie_link"] = {"under_load": f"Gen{now[0]} x{now[1]}", "datasheet": f"Gen{built[0]} x{built[1]}"}
    if None not in most:
        result.values["pcie_link"]["maximum"] = f"Gen{most[0]:.0f} x{most[1]:.0f}"
    result.figure("PCIe link under load vs datasheet", link_gb_s(*now), link_gb_s(*built), "GB/s", 1.0, thresholds()["pcie_fail_fraction"])
    if fraction >= 1:
        return
    if None not in most and (now[0] < most[0] or now[1] < most[1]):
        cause = f"the card and slot allow Gen{most[0]:.0f} x{most[1]:.0f}: the link trained below it (seating, riser or BIOS setting)"
    elif None not in most:
        cause = f"the slot allows only Gen{most[0]:.0f} x{most[1]:.0f}"
    else:
        cause = "the slot or riser limits it"
    message = f"the PCIe link runs at Gen{now[0]} x{now[1]} under load, the card is built for Gen{built[0]} x{built[1]}: {cause}"
    hint = HINT.format(gen=built[0], width=built[1])
    result.fail(message, hint) if fraction < thresholds()["pcie_fail_fraction"] else result.warn(message, hint)


def judge_copy(result, gb_s: float, row: dict | None) -> None:
    """A pinned host-to-device copy against the datasheet's link (the figure ROCm boxes are judged by)."""
    result.values["host_to_device_gb_s"] = round(gb_s, 2)
    if row is None or "pcie" not in row:
        return
    gen, width = row["pcie"]["gen"], row["pcie"]["width"]
    peak, table = link_gb_s(gen, width), thresholds()
    result.figure("host-to-device copy vs PCIe link", gb_s, peak, "GB/s", table["h2d_warn_fraction"], table["h2d_fail_fraction"])
    message = f"pinned host-to-device copies run at {gb_s:.1f} GB/s, {gb_s / peak:.0%} of a Gen{gen} x{width} link ({peak:.0f} GB/s)"
    if gb_s < table["h2d_fail_fraction"] * peak:
        result.fail(message, HINT.format(gen=gen, width=width))
    elif gb_s < table["h2d_warn_fraction"] * peak:
        result.warn(message, HINT.format(gen=gen, width=width))
