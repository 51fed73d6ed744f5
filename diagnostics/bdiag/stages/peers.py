"""Between the GPUs of a lot (stage 10): peer-to-peer access, the peer links (NVLink, Infinity
Fabric) against the datasheet, and the all_reduce bus bandwidth against what that topology
should give. Kept apart from the collectives stage's own flow, which launches the ranks.
"""

from __future__ import annotations

import re

from bdiag.datasheet import data, match_gpu
from bdiag.stages.card import number, smi_uuid
from bdiag.stages.pcie import link_gb_s

TOPOLOGY_HINT = (
    "Run with NCCL_DEBUG=INFO to see the transport NCCL picks (P2P/NVLS over NVLink, else SHM through host memory); "
    "`nvidia-smi topo -m` shows how the cards are connected. Ask the provider for a machine whose cards are linked as the offer says."
)


def thresholds() -> dict:
    return data()["collectives"]


def check_links(checkup, result, count: int) -> None:
    """Peer access between every pair of the first ``count`` GPUs, the peer links' active bandwidth, and
    what joins each pair (``nvidia-smi topo -m``, ``rocm-smi --showtopo``)."""
    probe, torch = checkup.probe, checkup.torch
    devices = (checkup.facts.get("devices") or [])[:count]
    pairs = [(first, second) for first in range(count) for second in range(count) if first != second]
    missing = [pair for pair in pairs if not probe.peer_access(torch, *pair)]
    result.values["peer_access"] = {"pairs": len(pairs), "without": [list(pair) for pair in missing]}
    row = match_gpu(devices[0]["name"]) if devices else None
    link = (row or {}).get("peer_link")
    active = _active_gb_s(checkup, devices)
    if active is not None:
        result.values["peer_link_active_gb_s"] = active
        checkup.facts["peer_link_gb_s"] = active
    joins = _joins(checkup, devices)
    if joins:
        result.values["topology"] = {f"{a}-{b}": how for (a, b), how in joins.items() if a < b}
        checkup.facts["pair_link"] = _pair_link(checkup, row, joins.get((0, 1)), (0, 1) not in missing)
    elif checkup.backend == "rocm" and link and not link["bridge"]:  # no rocm-smi: the OAM platform joins each pair by one link
        checkup.facts["pair_link"] = _pair_link(checkup, row, "XGMI per the platform, rocm-smi not read", True)
    if link is None:
        result.note(f"{row['name'] if row else 'this card'} has no peer link: GPUs exchange data over PCIe")
        return
    lacking = f"GPU {missing[0][0]} cannot access GPU {missing[0][1]} directly" if missing else ""
    if not link["bridge"]:
        if missing:
            result.fail(f"{lacking}, although {row['name']} cards are linked by {link['name']} on their baseboard", TOPOLOGY_HINT)
        unlinked = sorted((a, b) for (a, b), how in joins.items() if a < b and not how.startswith(("NV", "XGMI")))
        if unlinked:
            shown = ", ".join(f"GPU {a}-{b} by {joins[(a, b)]}" for a, b in unlinked[:4])
            result.fail(f"no {link['name']} between {shown}, although {row['name']} cards are linked on their baseboard", TOPOLOGY_HINT)
        if active is not None:
            result.figure(f"{link['name']} active vs datasheet", active, link["gb_s"], "GB/s", 0.95, thresholds()["nvlink_fail_fraction"])
            message = f"{link['name']} carries {active:.0f} GB/s per GPU, the datasheet {link['gb_s']:g} GB/s: links are down"
            if active < thresholds()["nvlink_fail_fraction"] * link["gb_s"]:
                result.fail(message, TOPOLOGY_HINT)
            elif active < 0.95 * link["gb_s"]:
                result.warn(message, TOPOLOGY_HINT)
    elif missing or active == 0:
        result.warn(
            f"{lacking or 'no active ' + link['name']}: the {link['name']} bridge {row['name']} cards can have is absent or off",
            "Collectives go through PCIe and host memory, several times slower than over the bridge. " + TOPOLOGY_HINT,
        )


def _joins(checkup, devices: list) -> dict:
    """(torch index, torch index) -> how the two GPUs are joined ("NV6", "SYS", "XGMI 1 hop", "PCIE"), where the tools tell."""
    if checkup.backend == "cuda":
        matrix = checkup.probe.nvidia_topology()
        state = checkup.facts.get("card_state") or {}
        index = [int(number(state.get(smi_uuid(info), {}).get("index")) or info["index"]) for info in devices]
        pairs = [(a, b) for a in range(len(devices)) for b in range(len(devices))]
        return {(a, b): matrix[(index[a], index[b])] for a, b in pairs if (index[a], index[b]) in matrix}
    matrix = checkup.probe.rocm_topology()
    index = _rocm_indices(checkup.probe.environ(), len(devices))
    joins = {}
    for a in range(len(devices)):
        for b in range(len(devices)):
            entry = matrix.get((index[a], index[b]))
            if entry and entry.get("type"):
                hops = entry.get("hops")
                counted = entry["type"] == "XGMI" and hops
                joins[(a, b)] = f"{entry['type']} {hops} hop{'s' if hops != 1 else ''}" if counted else entry["type"]
    return joins


def _rocm_indices(environ, count: int) -> list:
    """rocm-smi's index of each torch device (HIP/ROCR_VISIBLE_DEVICES renumber them when they list indices)."""
    for name in ("HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES"):
        parts = [part.strip() for part in environ.get(name, "").split(",") if part.strip()]
        if len(parts) >= count and all(part.isdigit() for part in parts):
            return [int(part) for part in parts[:count]]
    return list(range(count))


def _pair_link(checkup, row: dict | None, how: str | None, direct: bool) -> dict | None:
    """What one direction between GPU 0 and GPU 1 (the all_reduce's ranks) carries: their own links, not the card's aggregate."""
    if row is None or how is None:
        return None
    link = row.get("peer_link") or {}
    bonded = re.fullmatch(r"NV(\d+)", how)
    if bonded and link:
        per_link = _per_link_gb_s(checkup, link)
        count = int(bonded.group(1))
        return {"gb_s": round(count * per_link, 1), "over": f"{how} between GPU 0 and GPU 1 ({count} × {per_link:.1f} GB/s)"}
    if how.startswith("XGMI") and link:
        # MI300X-class boards: one xGMI link joins each pair; more hops still cross one link at a time
        return {"gb_s": round(link["gb_s"] / link["links"] / 2, 1), "over": f"one xGMI link between GPU 0 and GPU 1 ({how})"}
    if "pcie" in row:
        gb_s, over = _over_pcie(row, direct)
        return {"gb_s": gb_s, "over": f"{over} ({how} between GPU 0 and GPU 1)"}
    return None


def _over_pcie(row: dict, direct: bool) -> tuple[float, str]:
    """One direction over PCIe: the link itself with peer access, half of it through host memory without
    (GeForce cards: every byte crosses the link twice)."""
    gen, width = row["pcie"]["gen"], row["pcie"]["width"]
    if direct:
        return round(link_gb_s(gen, width), 1), f"PCIe Gen{gen} x{width}"
    return round(link_gb_s(gen, width) / 2, 1), f"host memory over PCIe Gen{gen} x{width} (no peer access: each byte crosses it twice)"


def _per_link_gb_s(checkup, link: dict) -> float:
    """One direction of one NVLink: nvidia-smi's reading where it answered, else the datasheet's aggregate per link."""
    reading = checkup.facts.get("peer_link_gb_s")
    links = checkup.facts.get("peer_links_active")
    if reading and links:
        return reading / 2 / links
    return link["gb_s"] / link["links"] / 2


def _active_gb_s(checkup, devices: list) -> float | None:
    """The smallest active peer-link bandwidth of the lot's GPUs, both directions (None when not read)."""
    if checkup.backend != "cuda" or not devices:
        return None
    links = checkup.probe.nvlink_links()
    readings = [links.get(smi_uuid(info)) for info in devices]
    if not links or any(reading is None for reading in readings):
        return None
    slowest = min(readings, key=lambda reading: reading["gb_s"])
    checkup.facts["peer_links_active"] = slowest["active"]
    return round(2 * slowest["gb_s"], 1)


def judge_bus_bandwidth(checkup, result, bandwidth: float, world: int) -> None:
    """The measured bus bandwidth against one direction of what joins the ranks' two GPUs."""
    devices = checkup.facts.get("devices") or []
    row = match_gpu(devices[0]["name"]) if checkup.gpu and devices else None
    if row is None:
        return
    link, peers, pair = row.get("peer_link"), result.values.get("peer_access", {}), checkup.facts.get("pair_link")
    linked = link is not None and not peers.get("without") and checkup.facts.get("peer_link_gb_s", link["gb_s"]) > 0
    if pair:
        expected, over = pair["gb_s"], pair["over"]
    elif linked:
        expected, over = checkup.facts.get("peer_link_gb_s", link["gb_s"]) / 2, link["name"]
    elif "pcie" in row:
        expected, over = _over_pcie(row, [0, 1] not in peers.get("without", []))
    else:
        return
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
