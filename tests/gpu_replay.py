"""Replay published captures of real GPU machines through the real stage code.

A scenario is one rented box: a rig of tests/captures/rigs.json (a card as people
measured it), a number of GPUs, and what is wrong with it (nothing, ECC errors on GPU 1,
a thermal throttle, ...). nvidia-smi and rocm-smi are replaced on PATH by
tests/fake_smi.py answering from the capture; torch's timings (GEMM TFLOP/s, copy TB/s,
the all_reduce's bus bandwidth) are injected through the Probe. The stages device,
compute and collectives then judge for real, and the verdict is right when a healthy box
passes every stage and a broken one fails a stage whose message or hint names the cause.

``python -m tests.gpu_replay`` prints right/total per card (the figure in docs/benchmarks.md).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from tests.diagnostics_support import FakeProbe, make_checkup, ordered

# isort: split
from bdiag.result import StageResult
from bdiag.stages import NAMES, collectives, compute, device

CAPTURES = Path(__file__).resolve().parent / "captures"
FAKE_SMI = Path(__file__).resolve().parent / "fake_smi.py"
TIME_SCALE = 0.02  # the fake tools' delays (2 s start-up, 200 ms ticks) shrunk fiftyfold
GB, MIB = 10**9, 1 << 20
ARCHES = ["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120", "compute_120"]
TORCH_FOR = {"11.8": "2.7.1+cu118", "12.1": "2.5.1+cu121", "12.4": "2.6.0+cu124", "12.6": "2.7.1+cu126"}
HEALTHY_SMI = {
    "compute_mode": "Default",
    "utilization.gpu": "0",
    "memory.used": "1",
    "mig.mode.current": "Disabled",
    "ecc.errors.uncorrected.volatile.total": "0",
    "retired_pages.pending": "No",
    "remapped_rows.pending": "No",
    "remapped_rows.failure": "No",
}
# Drivers 590+ no longer answer the applications-clocks fields.
DEPRECATED_590 = ["clocks.applications.graphics", "clocks.default_applications.graphics"]


def rigs() -> dict:
    return json.loads((CAPTURES / "rigs.json").read_text(encoding="utf-8"))["rigs"]


@dataclass(frozen=True)
class Scenario:
    rig: str
    count: int
    fault: str  # "healthy" or one of FAULTS
    expect: str  # "pass" or "fail"
    cause: str | None = None  # a word the failing message or hint must hold

    @property
    def id(self) -> str:
        return f"{self.rig}-x{self.count}-{self.fault}"


# fault -> (the cause the verdict must name, the rigs and GPU counts it is replayed on)
FAULTS = {
    "ecc-gpu1": ("ECC", [("h100-sxm", 8), ("h200", 8), ("a100-sxm", 4), ("l40s", 2), ("l4", 2), ("b200", 8), ("h100-pcie", 2)]),
    "remap-pending-gpu1": ("remap", [("h100-sxm", 2), ("h200", 4), ("a100-sxm", 8), ("b200", 2)]),
    "remap-failure-gpu1": ("remap", [("h100-sxm", 4), ("a100-sxm", 2)]),
    "thermal": (
        "thermal",
        [("h100-sxm", 1), ("h200", 1), ("a100-sxm", 1), ("l40s", 1), ("l4", 1), ("rtx4090", 1), ("b200", 2), ("gh200", 1)],
    ),
    "slow-gemm": ("GEMM", [("mi300x", 1), ("mi300x", 2)]),
    "power-capped": ("power limit", [("h100-sxm", 8), ("h100-pcie", 1), ("a100-sxm", 1), ("l40s", 1), ("rtx4090", 1), ("h200", 2)]),
    "gen1-under-load": ("Gen1", [("h100-sxm", 1), ("l40s", 1), ("l4", 1), ("rtx4090", 1), ("h100-pcie", 1), ("a100-sxm", 2)]),
    "slow-host-link": ("host-to-device", [("mi300x", 1)]),
    "nvlink-down": ("NVLink", [("h100-sxm", 2), ("h200", 8), ("a100-sxm", 2), ("b200", 2)]),
    "mig": ("MIG", [("a100-sxm", 1), ("h100-sxm", 1)]),
    "exclusive-process": ("Exclusive_Process", [("h100-sxm", 2), ("l40s", 2), ("a100-sxm", 8)]),
    "driver-590-clocks-locked": ("held", [("h100-sxm", 1)]),
}
# Healthy boxes that look broken at a glance.
HEALTHY_VARIANTS = {
    "idle-downtrained": [("h100-sxm", 1), ("l4", 1), ("rtx4090", 1)],
    "driver-590": [("h100-sxm", 1), ("b200", 2)],
    "no-smi-tool": [("h100-sxm", 2), ("mi300x", 2)],  # an image without nvidia-smi / rocm-smi: reported, not judged
}


def scenarios() -> list:
    found = [Scenario(name, count, "healthy", "pass") for name, rig in rigs().items() for count in rig["counts"]]
    for variant, places in HEALTHY_VARIANTS.items():
        found += [Scenario(name, count, variant, "pass") for name, count in places]
    for fault, (cause, places) in FAULTS.items():
        found += [Scenario(name, count, fault, "fail", cause) for name, count in places]
    return found


# --- the machine a scenario describes ------------------------------------------------------------------


def _uuid(index: int) -> str:
    return f"{0x5A10E6E5 + index:08x}-95f7-2785-ed63-6f6147f304f7"


def _topo_text(rig: dict, count: int, fault: str) -> str | None:
    if not rig.get("topo"):
        return None
    lines = (CAPTURES / rig["topo"]).read_text(encoding="utf-8").splitlines()
    table = [line.split() for line in lines if line.startswith("GPU")]
    head = lines[0].split()
    gpu_columns = [column for column in head if column.startswith("GPU") and column[3:].isdigit()]
    out = ["\t" + "\t".join(gpu_columns[:count])]
    for row in table[:count]:
        cells = row[1 : 1 + len(gpu_columns)][:count]
        if fault == "nvlink-down" and row[0] in ("GPU0", "GPU1"):
            cells = [cell if cell == "X" else "SYS" for cell in cells]
        elif fault == "nvlink-down":
            cells = ["SYS" if index in (0, 1) else cell for index, cell in enumerate(cells)]
        out.append(row[0] + "\t" + "\t".join(" X " if cell == "X" else cell for cell in cells))
    return "\n".join(out) + "\n\nLegend:\n\n  X    = Self\n  NV#  = Connection traversing a bonded set of # NVLinks\n"


def _nvlink_text(rig: dict, count: int, fault: str) -> str:
    link = rig.get("nvlink")
    if not link:
        return ""
    lines = []
    for index in range(count):
        lines.append(f"GPU {index}: {rig['name']} (UUID: GPU-{_uuid(index)})")
        down = fault == "nvlink-down" and index in (0, 1)
        for number in range(link["links"]):
            lines.append(f"\t Link {number}: " + ("<inactive>" if down else f"{link['gb_s']} GB/s"))
    return "\n".join(lines) + "\n"


def _rocm_topo_text(rig: dict, count: int) -> str:
    text = (CAPTURES / rig["rocm_topo"]).read_text(encoding="utf-8").splitlines()
    kept = []
    for line in text:
        words = line.split()
        if words and words[0].startswith("GPU") and words[0][3:].isdigit():
            if int(words[0][3:]) >= count:
                continue
            line = words[0].ljust(7) + "".join(word.ljust(13) for word in words[1 : 1 + count])
        elif words and all(word.startswith("GPU") and word[3:].isdigit() for word in words):
            line = "       " + "".join(word.ljust(13) for word in words[:count])
        kept.append(line)
    return "\n".join(kept) + "\n"


def _smi_state(rig: dict, count: int, fault: str) -> dict:
    gpus = []
    for index in range(count):
        fields = dict(HEALTHY_SMI, **rig["smi"])
        fields.update(uuid=f"GPU-{_uuid(index)}", index=str(index), name=rig["name"], driver_version=rig["driver"])
        fields["memory.total"] = str(rig["memory_mib"])
        gpus.append(fields)
    load = {
        "clocks_event_reasons.active": rig["load"]["mask"],
        "clocks.sm": rig["load"]["clocks.sm"],
        "temperature.gpu": rig["load"]["temperature.gpu"],
        "power.draw": rig["load"]["power.draw"],
        "pcie.link.gen.current": rig["smi"]["pcie.link.gen.max"],
        "pcie.link.width.current": rig["smi"]["pcie.link.width.max"],
        "utilization.gpu": "100",
    }
    idle = dict(load, **{"clocks_event_reasons.active": "0x0000000000000001", "clocks.sm": "345", "utilization.gpu": "0"})
    idle.update({"power.draw": "70.10", "pcie.link.gen.current": "1"})  # cards downtrain their link at idle
    sampler = {"startup_s": 2.0, "idle_rows": 1, "idle": idle, "load": load, "per_gpu": {}}
    invalid = ["clocks_event_reasons.active"] if int(rig["driver"].split(".")[0]) < 535 else []
    _apply_fault(fault, gpus, sampler, invalid, rig)
    for phase in (load, idle):  # the older name of the same field, which every driver answers
        phase["clocks_throttle_reasons.active"] = phase["clocks_event_reasons.active"]
    texts = {"-L": "".join(f"GPU {g['index']}: {g['name']} (UUID: {g['uuid']})\n" for g in gpus)}
    topo = _topo_text(rig, count, fault)
    if topo is not None:
        texts["topo -m"] = topo
    texts["nvlink --status"] = texts["nvlink -s"] = _nvlink_text(rig, count, fault)
    return {"gpus": gpus, "invalid": invalid, "texts": texts, "sampler": sampler}


def _apply_fault(fault: str, gpus: list, sampler: dict, invalid: list, rig: dict) -> None:
    load = sampler["load"]
    if fault == "ecc-gpu1":
        gpus[1].update({"ecc.errors.uncorrected.volatile.total": "12", "remapped_rows.pending": "Yes"})
    elif fault == "remap-pending-gpu1":
        gpus[1].update({"remapped_rows.pending": "Yes"})  # tests/captures/remapped-rows-pending.txt
    elif fault == "remap-failure-gpu1":
        gpus[1].update({"remapped_rows.failure": "Yes", "ecc.errors.uncorrected.volatile.total": "0"})
    elif fault == "thermal":
        load.update({"clocks_event_reasons.active": "0x0000000000000060", "clocks.sm": str(int(int(load["clocks.sm"]) * 0.55))})
        load["temperature.gpu"] = "93"
    elif fault == "power-capped":
        capped = f"{float(rig['smi']['power.default_limit']) * 0.6:.2f}"
        for gpu in gpus:
            gpu.update({"power.limit": capped, "enforced.power.limit": capped})
        load.update({"clocks_event_reasons.active": "0x0000000000000004", "power.draw": capped})
    elif fault == "gen1-under-load":
        load["pcie.link.gen.current"] = "1"
    elif fault == "mig":
        gpus[0]["mig.mode.current"] = "Enabled"
    elif fault == "exclusive-process":
        for gpu in gpus:
            gpu["compute_mode"] = "Exclusive_Process"
    elif fault in ("driver-590", "driver-590-clocks-locked"):
        invalid += DEPRECATED_590
        for gpu in gpus:
            gpu["driver_version"] = "590.44.01"
        if fault == "driver-590-clocks-locked":  # nvidia-smi -lgc 1000,1000 on the host
            load.update({"clocks_event_reasons.active": "0x0000000000000002", "clocks.sm": "1000"})
    elif fault == "idle-downtrained":
        sampler["idle_rows"] = 3


GEMM_FACTOR = {"thermal": 0.55, "power-capped": 0.75, "driver-590-clocks-locked": 0.5, "slow-gemm": 0.5}


def observed(rig: dict, count: int, fault: str) -> dict:
    """What torch reports on this box: the devices and the injected timings."""
    figures = rig["figures"]
    total = rig["memory_mib"] * MIB
    name, uuid_of = rig["name"], _uuid
    if fault == "mig":
        name, total = f"{rig['name']} MIG 1g.10gb", 9984 * MIB

    def properties(torch_, index):
        info = {
            "index": index,
            "name": name,
            "total_memory": total,
            "free_memory": total - 520 * MIB,
            "capability": list(rig["capability"]),
            "multiprocessors": 132,
        }
        if rig["backend"] == "rocm":
            info["gcnArchName"] = "gfx942:sramecc+:xnack-"
        else:
            info["uuid"] = "MIG-feb88891-0321-5fef-9c87-d4af3b54259e" if fault == "mig" else uuid_of(index)
        return info

    bus = figures.get("bus_gb_s") or 0.0
    if fault == "nvlink-down":
        bus = 18.0
    answers = [{"ok": True, "rank": rank, "bus_bandwidth_gb_s": bus, "value": 3.0, "expected": 3.0} for rank in (0, 1)]
    if fault == "exclusive-process":
        busy = "RuntimeError: CUDA error: CUDA-capable device(s) is/are busy or unavailable"
        answers = [{"ok": False, "exit_code": 1, "error": busy}, {"ok": False, "exit_code": 1, "error": busy}]
    h2d = figures["h2d_gb_s"]
    if fault == "gen1-under-load":
        h2d = 3.4
    if fault == "slow-host-link":
        h2d = 6.1
    environ = {"CUDA_VISIBLE_DEVICES": "MIG-feb88891-0321-5fef-9c87-d4af3b54259e"} if fault == "mig" else {}
    torch_cuda = "13.0" if fault.startswith("driver-590") else rig["torch_cuda"]
    if rig["backend"] == "rocm":
        versions = {"version": "2.7.1+rocm6.3", "cuda": None, "hip": "6.3.42131"}
        arches = ["gfx90a", "gfx942"]
    else:
        versions = {"version": TORCH_FOR.get(torch_cuda, f"2.9.0+cu{torch_cuda.replace('.', '')}"), "cuda": torch_cuda, "hip": None}
        arches = ARCHES
    return dict(
        torch_versions=versions,
        cuda_available=True,
        device_count=1 if fault == "mig" else count,
        device_properties=properties,
        arch_list=arches,
        device_matmul=lambda torch_, a, b, device_, dtype: (a.to(dtype) @ b.to(dtype)).to(a.dtype),
        matmul_tflops=figures["gemm_tflops"] * GEMM_FACTOR.get(fault, 1.0),
        copy_bandwidth_tbs=figures["copy_tbs"],
        host_to_device_gb_s=h2d,
        peer_access=rig.get("peer_access", True),
        run_collective=answers,
        environ=environ,
    )


def write_state(scenario: Scenario, folder: Path) -> dict:
    """The fake tools on PATH and their state file; the environment to run under."""
    rig = rigs()[scenario.rig]
    state = {"nvidia-smi": None, "rocm-smi": None}
    if rig["backend"] == "cuda":
        state["nvidia-smi"] = _smi_state(rig, scenario.count, scenario.fault)
    else:
        state["rocm-smi"] = {"texts": {"--showtopo": _rocm_topo_text(rig, scenario.count)}}
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "state.json").write_text(json.dumps(state), encoding="utf-8")
    for tool, answers in state.items():
        if answers is None or scenario.fault == "no-smi-tool":
            continue
        shim = folder / tool
        shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -S "{FAKE_SMI}" {tool} "$@"\n', encoding="utf-8")
        shim.chmod(0o755)
    path = os.pathsep.join([str(folder), *[p for p in os.environ.get("PATH", "").split(os.pathsep) if p]])
    return {"PATH": path, "FAKE_SMI_STATE": str(folder / "state.json"), "FAKE_SMI_TIME_SCALE": str(TIME_SCALE)}


# --- replay and judge ------------------------------------------------------------------------------------


def replay(scenario: Scenario, folder: Path) -> list:
    """Run the stages on the scenario's box; their StageResults."""
    rig = rigs()[scenario.rig]
    environment = write_state(scenario, folder)
    saved = {key: os.environ.get(key) for key in environment}
    os.environ.update(environment)
    try:
        probe = FakeProbe(**_with_fast_sampling(observed(rig, scenario.count, scenario.fault)))
        if hasattr(probe, "sample_seconds"):
            probe.sample_seconds = 2 * TIME_SCALE
        lots = max(1, scenario.count // rig["cards_per_lot"])
        checkup = make_checkup(probe, rig["backend"], order=ordered(rig["card"], lots, rig["cards_per_lot"]))
        results = []
        for stage in (device, compute, collectives):
            if stage is collectives and scenario.count < 2:
                continue
            result = StageResult(stage.NAME, NAMES.index(stage.NAME) + 1)
            stage.run(checkup, result)
            results.append(result)
        return results
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _with_fast_sampling(observed_: dict) -> dict:
    from bdiag.probe import Probe

    if hasattr(Probe, "gemm_burst"):  # the load kept running while nvidia-smi samples: a short sleep here
        observed_["gemm_burst"] = lambda *args, **kwargs: time.sleep(0.002)
    return observed_


def verdict(scenario: Scenario, results: list) -> tuple[bool, str]:
    """(right, what the stages said) for one replayed scenario."""
    statuses = {result.name: result.status for result in results}
    failing = [result for result in results if result.status == "fail"]
    said = "; ".join(f"{r.name}={r.status}: {' | '.join(r.messages) or r.summary}" for r in results if r.status != "pass")
    if scenario.expect == "pass":
        return all(status == "pass" for status in statuses.values()), said or "all pass"
    text = " ".join(" ".join([*r.messages, r.hint or ""]) for r in failing).lower()
    return bool(failing) and scenario.cause.lower() in text, said or "all pass"


def measure(selected: list | None = None) -> dict:
    """Replay every scenario; {card: [right, total]} and the wrong ones."""
    table: dict = {}
    wrong = []
    with tempfile.TemporaryDirectory(prefix="gpu-replay-") as folder:
        for number, scenario in enumerate(selected or scenarios()):
            right, said = verdict(scenario, replay(scenario, Path(folder) / str(number)))
            card = rigs()[scenario.rig]["card"]
            counts = table.setdefault(card, [0, 0])
            counts[0] += right
            counts[1] += 1
            if not right:
                wrong.append((scenario.id, scenario.expect, said))
    return {"cards": table, "wrong": wrong}


def main() -> int:
    figures = measure()
    right = sum(counts[0] for counts in figures["cards"].values())
    total = sum(counts[1] for counts in figures["cards"].values())
    print(f"right verdicts: {right} of {total}")
    for card, (good, count) in figures["cards"].items():
        print(f"  {card:10} {good:3} of {count}")
    for scenario_id, expect, said in figures["wrong"]:
        print(f"WRONG {scenario_id} (expected {expect}): {said[:300]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
