"""Shared by the diagnostics tests: a Probe with single observations replaced, and the
stage runner. Each fault-injection test feeds one broken observation through the Probe
boundary and lets the stage logic judge it for real."""

from __future__ import annotations

import sys
from pathlib import Path

import torch

DIAGNOSTICS = Path(__file__).resolve().parents[1] / "diagnostics"
if str(DIAGNOSTICS) not in sys.path:
    sys.path.insert(0, str(DIAGNOSTICS))

from bdiag.checkup import Checkup  # noqa: E402
from bdiag.order import Order  # noqa: E402
from bdiag.probe import Probe  # noqa: E402
from bdiag.result import StageResult  # noqa: E402
from bdiag.stages import NAMES  # noqa: E402

GB = 10**9
H200 = {
    "index": 0,
    "name": "NVIDIA H200",
    "total_memory": 150 * GB,
    "free_memory": 149 * GB,
    "capability": [9, 0],
    "multiprocessors": 132,
    "uuid": "GPU-0f0e0d0c",
}
MI300X = {
    "index": 0,
    "name": "AMD Instinct MI300X",
    "total_memory": 205 * GB,
    "free_memory": 204 * GB,
    "capability": [9, 4],
    "multiprocessors": 304,
    "gcnArchName": "gfx942:sramecc+:xnack-",
}
CUDA_13 = {"version": "2.13.0+cu130", "cuda": "13.0", "hip": None}
ROCM_72 = {"version": "2.13.0+rocm7.2", "cuda": None, "hip": "7.2.0"}


class FakeProbe(Probe):
    """The real probe with some observations replaced; the environment starts empty."""

    def __init__(self, **observed) -> None:
        super().__init__()
        observed.setdefault("environ", {})
        for name, value in observed.items():
            assert hasattr(Probe, name), f"Probe has no method {name}"
            setattr(self, name, value if callable(value) else (lambda *args, _value=value, **kwargs: _value))

    def prestart(self) -> None:
        pass


def gpu_probe(**observed) -> FakeProbe:
    """A probe that sees one healthy H200 with a CUDA 13.0 build of torch."""
    defaults = dict(
        torch_versions=CUDA_13,
        cuda_available=True,
        device_count=1,
        device_properties=H200,
        arch_list=["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120", "compute_120"],
        nvidia_driver_version="580.65.06",
        nvidia_smi=None,
        sample_under_load=[],
        device_matmul=lambda torch_, a, b, device_, dtype: (a.to(dtype) @ b.to(dtype)).to(torch.float64),
        matmul_tflops=800.0,
        copy_bandwidth_tbs=4.2,
        host_to_device_gb_s=52.0,
        peer_access=True,
        nvlink_links={},
    )
    defaults.update(observed)
    return FakeProbe(**defaults)


def ordered(card: str = "H200", lots: int = 1, cards_per_lot: int = 1) -> Order:
    """What a plan.toml and its catalog would say was paid for."""
    return Order(plan="/project/plan.toml", catalog="/project/catalog.toml", card=card, lots=lots, cards_per_lot=cards_per_lot)


AS_SEEN = object()  # the order matching the default probe's one card (H200 on cuda, MI300X on rocm)


def make_checkup(probe, backend="cuda", bundle=None, results_dir=None, facts=None, order=AS_SEEN) -> Checkup:
    if order is AS_SEEN:
        order = {"cuda": ordered("H200"), "rocm": ordered("MI300X")}.get(backend)
    checkup = Checkup(probe=probe, backend=backend, backend_source="test", bundle=bundle, results_dir=results_dir, order=order)
    checkup.torch = torch
    checkup.facts.update(facts or {})
    if backend in ("cuda", "rocm"):
        checkup.facts.setdefault("torch", probe.torch_versions(torch))
    return checkup


def run_stage(stage, checkup) -> StageResult:
    result = StageResult(stage.NAME, NAMES.index(stage.NAME) + 1)
    stage.run(checkup, result)
    return result


def write_bundle(folder: Path, text_extra: str = "", backend="cpu", accelerator="", python="3.11") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "bundle.toml").write_text(
        f'[project]\nname = "P"\npackage = "p"\nentry = "python -m p"\n'
        f'[target]\nbackend = "{backend}"\naccelerator = "{accelerator}"\ntorch = "2.13.0"\npython = "{python}"\n' + text_extra,
        encoding="utf-8",
    )
    return folder / "bundle.toml"
