"""Between the GPUs of a lot (stage 10): peer-to-peer access, the peer links (NVLink, Infinity
Fabric) against the datasheet, and the all_reduce bus bandwidth against what that topology
should give. Kept apart from the collectives stage's own flow, which launches the ranks.
"""

from __future__ import annotations

from bdiag.datasheet import data, match_gpu
from bdiag.stages.card import smi_uuid
from bdiag.stages.pcie import link_gb_s

TOPOLOGY_HINT = (
    "Run with NCCL_DEBUG=INFO to see the transport NCCL picks (P2P/NVLS over NVLink, else SHM through host memory); "
    "`nvidia-smi topo -m` shows how the cards are connected. Ask the provider for a machine whose cards are linked as the offer says."
)


def thresholds() -> dict:
    return data()["collectives"]


def check_links(checkup, result, count: int) -> None:
    """Peer access between every pair of the first ``count`` GPUs, and the peer links' active bandwidth."""
    probe, torch = checkup.probe, checkup.torch
    devices = (checkup.facts.get("devices") or [])[:count]
    pairs = [(first, second) for first in range(count) for second in range(count) if first != second]
    missing = [pair for pair in pairs if not probe.peer_access(torch, *pair)]
    result.values["peer_access"] = {"pairs": len(pairs), "without": [list(pair) for pair in missing]}
    row = match_gpu(devices[0]["name"]) if devices else None
    link = (row or {}).get("peer_link")
    card = row["name"] if row else "this card"
    active = _active_gb_s(checkup, devices)
    if active is not None:
        result.values["peer_link_active_gb_s"] = active
        checkup.facts["peer_link_gb_s"] = active
    if link is None:
        result.note(f"{card} has no peer link: GPUs exchange data over PCIe")
        return
    lacking = f"GPU {missing[0][0]} cannot access GPU {missing[0][1]} directly" if missing else ""
    if not link["bridge"]:
        if missing:
            result.fail(f"{lacking}, although {card} cards are linked by {link['name']} on their baseboard", TOPOLOGY_HINT)
        if active is not None:
            result.figure(f"{link['name']} active vs datasheet", active, link["gb_s"], "GB/s", 0.95, thresholds()["nvlink_fail_fraction"])
            message = f"{link['name']} carries {active:.0f} GB/s per GPU, the datasheet {link['gb_s']:g} GB/s: links are down"
            if active < thresholds()["nvlink_fail_fraction"] * link["gb_s"]:
                result.fail(message, TOPOLOGY_HINT)
            elif active < 0.95 * link["gb_s"]:
                result.warn(message, TOPOLOGY_HINT)
    elif missing or active == 0:
        result.warn(
            f"{lacking or 'no active ' + link['name']}: the {link['name']} bridge {card} cards can have is absent or off",
            "Collectives go through PCIe and host memory, several times slower than over the bridge. " + TOPOLOGY_HINT,
        )


def _active_gb_s(checkup, devices: list) -> float | None:
    """The smallest active peer-link bandwidth of the lot's GPUs, both directions (None when not read)."""
    if checkup.backend != "cuda" or not devices:
        return None
    links = checkup.probe.nvlink_links()
    readings = [links.get(smi_uuid(info)) for info in devices]
    if not links or any(reading is None for reading in readings):
        return None
    return round(min(2 * reading["gb_s"] for reading in readings), 1)


def judge_bus_bandwidth(checkup, result, bandwidth: float, world: int) -> None:
    """The measured bus bandwidth against one direction of the link the ranks should use."""
    devices = checkup.facts.get("devices") or []
    row = match_gpu(devices[0]["name"]) if checkup.gpu and devices else None
    if row is None:
        return
    link, peers = row.get("peer_link"), result.values.get("peer_access", {})
    linked = link is not None and not peers.get("without") and checkup.facts.get("peer_link_gb_s", link["gb_s"]) > 0
    if link is not None and linked:
        expected, over = checkup.facts.get("peer_link_gb_s", link["gb_s"]) / 2, link["name"]
    else:
        expected, over = link_gb_s(row["pcie"]["gen"], row["pcie"]["width"]), f"PCIe Gen{row['pcie']['gen']} x{row['pcie']['width']}"
    table = thresholds()
    result.values.update(bus_bandwidth_expected_gb_s=round(expected, 1), bus_bandwidth_over=over)
    warn_at, fail_at = table["bus_warn_fraction"], table["bus_fail_fraction"]
    result.figure(f"all_reduce bus bandwidth vs {over}", bandwidth, expected, "GB/s", warn_at, fail_at)
    message = (
        f"the {world}-rank all_reduce reached {bandwidth:.1f} GB/s bus bandwidth, "
        f"{bandwidth / expected:.0%} of the {expected:.0f} GB/s {over} gives"
    )
    environ = checkup.probe.environ()
    disabled = [f"{name}={environ[name]}" for name in ("NCCL_P2P_DISABLE", "NCCL_SHM_DISABLE") if environ.get(name) == "1"]
    hint = (f"{' and '.join(disabled)} is set in the environment. " if disabled else "") + TOPOLOGY_HINT
    if bandwidth < table["bus_fail_fraction"] * expected:
        result.fail(message, hint)
    elif bandwidth < table["bus_warn_fraction"] * expected:
        result.warn(message, hint)
