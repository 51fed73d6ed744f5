"""Captures of real GPU machines replayed through the real stages (tests/gpu_replay.py): every
healthy box passes and every broken one fails naming its cause; and the readers of the tools'
outputs against the captures themselves."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests import gpu_replay
from tests.diagnostics_support import H200, gpu_probe, make_checkup, run_stage

# isort: split
from bdiag import datasheet, workloads
from bdiag.probe import Probe
from bdiag.probe_gpu import MIN_SAMPLES, parse_rocm_topology, parse_topo_matrix
from bdiag.stages import card, checkpoint, compute

SCENARIOS = gpu_replay.scenarios()


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[scenario.id for scenario in SCENARIOS])
def test_replayed_capture_gets_the_right_verdict(scenario, tmp_path):
    results = gpu_replay.replay(scenario, tmp_path)
    right, said = gpu_replay.verdict(scenario, results)
    assert right, f"expected {scenario.expect} naming {scenario.cause!r}; the stages said: {said}"


def test_the_matrix_covers_every_card_of_the_issue_healthy_and_broken():
    cards = {gpu_replay.rigs()[scenario.rig]["card"] for scenario in SCENARIOS}
    assert {"H100 SXM", "H100 PCIe", "H200", "A100 SXM", "L40S", "L4", "RTX 4090", "B200", "GH200", "MI300X"} <= cards
    counts = {scenario.count for scenario in SCENARIOS if scenario.fault == "healthy"}
    assert counts == {1, 2, 4, 8}
    assert sum(scenario.expect == "fail" for scenario in SCENARIOS) >= 40


# --- the tools' outputs, read from the captures ---------------------------------------------------------


def test_topo_matrix_reads_bonded_nvlinks_per_pair():
    four = parse_topo_matrix((gpu_replay.CAPTURES / "topo-hgx4-nv6.txt").read_text())
    assert four[(0, 1)] == four[(3, 2)] == "NV6" and (0, 0) not in four and len(four) == 12
    bridged = parse_topo_matrix((gpu_replay.CAPTURES / "topo-pcie4-bridged-nv12.txt").read_text())
    assert bridged[(0, 1)] == "NV12" and bridged[(1, 2)] == "SYS"
    assert parse_topo_matrix("") == {}


def test_rocm_showtopo_reads_link_type_hops_and_weight():
    pcie = parse_rocm_topology((gpu_replay.CAPTURES / "rocm-showtopo-pcie4.txt").read_text())
    assert pcie[(0, 3)] == {"weight": 52, "hops": 3, "type": "PCIE"}
    xgmi = parse_rocm_topology((gpu_replay.CAPTURES / "rocm-showtopo-mi300x-xgmi8.txt").read_text())
    assert xgmi[(2, 7)] == {"weight": 15, "hops": 1, "type": "XGMI"} and len(xgmi) == 56


# --- datasheet rows and the order -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "card_name, device_name, same",
    [
        ("A100 SXM", "NVIDIA A100-SXM4-80GB", True),
        ("A100 SXM", "NVIDIA A100 80GB PCIe", False),
        ("A10", "NVIDIA A100-SXM4-80GB", False),
        ("GH200", "NVIDIA GH200 480GB", True),
        ("H20", "NVIDIA H200", False),
        ("H200 SXM 141GB", "NVIDIA H200", True),
        ("H200 NVL 141GB", "NVIDIA H200", False),
        ("H100", "NVIDIA H100 PCIe", True),
        ("H100 PCIe 80GB", "NVIDIA H100 80GB HBM3", False),
    ],
)
def test_an_order_names_the_card_it_means(card_name, device_name, same):
    assert datasheet.names_card(card_name, device_name) is same


def test_new_rows_are_matched_and_b200_memory_is_7_7_tb_s():
    for device_name, row in [
        ("NVIDIA GH200 480GB", "GH200"),
        ("NVIDIA A10G", "A10G"),
        ("NVIDIA L40", "L40"),
        ("NVIDIA RTX 6000 Ada Generation", "RTX 6000 Ada"),
        ("NVIDIA H800", "H800"),
        ("NVIDIA H20", "H20"),
    ]:
        assert datasheet.match_gpu(device_name)["name"] == row
    assert datasheet.match_gpu("NVIDIA L40S")["name"] == "L40S"
    assert datasheet.match_gpu("NVIDIA B200")["bandwidth_tbs"] == 7.7


def test_each_healthy_gemm_figure_passes_its_own_bar_and_names_its_source():
    for row in datasheet.data()["gpus"]:
        healthy = row.get("gemm_healthy")
        if healthy:
            limits = datasheet.thresholds(row)
            assert healthy["source"] and limits["gemm_warn"] < limits["gemm_pass"] < healthy["fraction"], row["name"]


# --- memory health of every card, mapped through CUDA_VISIBLE_DEVICES ----------------------------------------


def test_health_rows_follow_cuda_visible_devices_when_torch_gives_no_uuid():
    rows = [{"uuid": f"GPU-{n}", "index": str(n)} for n in range(4)]
    devices = [{"index": 0, "name": "NVIDIA H100 80GB HBM3"}, {"index": 1, "name": "NVIDIA H100 80GB HBM3"}]
    assert [row["index"] for _, row in card.rows_in_use(devices, rows, "2,3")] == ["2", "3"]
    assert [row["index"] for _, row in card.rows_in_use(devices, rows, "GPU-3,GPU-1")] == ["3", "1"]
    assert [row["index"] for _, row in card.rows_in_use(devices, rows, None)] == ["0", "1"]


# --- the sampler against a real slow-starting process -------------------------------------------------------


def test_the_load_runs_until_nvidia_smi_answered_enough_samples(tmp_path, monkeypatch):
    scenario = gpu_replay.Scenario("h100-sxm", 1, "healthy", "pass")
    for key, value in gpu_replay.write_state(scenario, tmp_path).items():
        monkeypatch.setenv(key, value)
    bursts = []
    probe = Probe()
    probe.sample_seconds = 0.05
    samples = probe.sample_under_load(f"GPU-{gpu_replay._uuid(0)}", lambda: bursts.append(1))
    assert len(samples) >= MIN_SAMPLES and len(bursts) > len(samples)
    assert samples[0][0] == "0x0000000000000001"  # the idle sample before the load, kept apart by card.under_load
    assert len(card.under_load(samples)) == len(samples) - 1


# --- Exclusive_Process named where the fresh processes are refused --------------------------------------------


def test_checkpoint_reload_refused_by_exclusive_process_names_the_compute_mode(monkeypatch, tmp_path):
    on_cpu = workloads.training_objects, workloads.train_steps
    monkeypatch.setattr(workloads, "training_objects", lambda device: on_cpu[0]("cpu"))
    monkeypatch.setattr(workloads, "train_steps", lambda objects, device: on_cpu[1](objects, "cpu"))

    def refused(checkpoint_, device_, out):
        raise RuntimeError("the fresh process exited 1: CUDA error: CUDA-capable device(s) is/are busy or unavailable")

    probe = gpu_probe(reload_checkpoint=refused)
    facts = {"devices": [H200], "card_state": {H200["uuid"]: {"compute_mode": "Exclusive_Process"}}}
    result = run_stage(checkpoint, make_checkup(probe, results_dir=str(tmp_path), facts=facts))
    assert result.status == "fail"
    assert "GPU 0 (Exclusive_Process)" in result.reason and "nvidia-smi -c DEFAULT" in result.hint


def test_a_throttle_seen_under_load_turns_a_slow_gemm_into_a_failure_naming_it():
    thermal = [["0x0000000000000040", "1100", "92", "640.0", "5", "16", "100"]] * MIN_SAMPLES
    probe = gpu_probe(matmul_tflops=0.62 * 989, sample_under_load=thermal)
    result = run_stage(compute, make_checkup(probe, facts={"devices": [H200]}))
    assert result.status == "fail" and "hardware thermal slowdown" in result.reason


def test_the_fake_tool_refuses_an_unknown_field_like_nvidia_smi(tmp_path):
    scenario = gpu_replay.Scenario("h100-sxm", 1, "driver-590", "pass")
    environment = dict(os.environ, **gpu_replay.write_state(scenario, tmp_path))
    done = subprocess.run(
        [sys.executable, str(gpu_replay.FAKE_SMI), "nvidia-smi", "--query-gpu=clocks.applications.graphics", "--format=csv"],
        capture_output=True,
        text=True,
        env=environment,
    )
    assert done.returncode == 2 and "is not a valid field" in done.stdout
