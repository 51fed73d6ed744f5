"""The rental failures the first stages missed, fault-injected through the Probe: a PCIe link
below its generation or width, a card already busy, clocks or power held low, no peer link
between the GPUs of a lot, and container limits below the work."""

from __future__ import annotations

import pytest

from tests.diagnostics_support import GB, H200, FakeProbe, gpu_probe, make_checkup, ordered, run_stage, write_bundle

# isort: split
from bdiag.checkup import read_bundle
from bdiag.stages import collectives, compute, device, memory, storage

GIB = 1 << 30
UUID = "GPU-0f0e0d0c"
H100 = dict(H200, name="NVIDIA H100 80GB HBM3", total_memory=85 * GB, free_memory=84 * GB)


def smi(**fields) -> list:
    return [dict({"uuid": UUID}, **fields)]


def gemm_samples(mask="0x0000000000000000", clock="1980", gen="5", width="16", count=5) -> list:
    return [[mask, clock, "60", "650.0", gen, width]] * count


def compute_stage(state: dict | None = None, samples: list | None = None, **observed):
    probe = gpu_probe(sample_under_load=samples or gemm_samples(), **observed)
    return run_stage(compute, make_checkup(probe, facts={"devices": [H200], "card_state": {UUID: state or {}}}))


# --- PCIe link ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "gen, width, maximum, status, named",
    [
        ("5", "16", ("5", "16"), "pass", None),
        ("4", "16", ("4", "16"), "warn", "the slot allows only Gen4 x16"),
        ("3", "8", ("5", "16"), "fail", "trained below it"),
        ("4", "4", ("5", "16"), "fail", "runs at Gen4 x4 under load"),
    ],
)
def test_pcie_link_under_load_against_the_datasheet(gen, width, maximum, status, named):
    state = {"pcie.link.gen.max": maximum[0], "pcie.link.width.max": maximum[1]}
    result = compute_stage(state, gemm_samples(gen=gen, width=width))
    assert result.status == status, result.messages
    assert result.values["pcie_link"]["under_load"] == f"Gen{gen} x{width}"
    if named:
        assert named in result.reason and "reseat" in result.hint
    assert any(figure["label"] == "PCIe link under load vs datasheet" for figure in result.figures)


@pytest.mark.parametrize("gb_s, status", [(52.0, "pass"), (25.0, "warn"), (9.0, "fail")])
def test_host_to_device_copy_against_the_link(gb_s, status):
    result = compute_stage(host_to_device_gb_s=gb_s, samples=[["0x0", "1980", "60", "650.0"]])  # a driver without PCIe samples
    assert result.status == status, result.messages
    assert result.values["host_to_device_gb_s"] == gb_s
    if status != "pass":
        assert "Gen5 x16 link (63 GB/s)" in result.reason


# --- clocks and power ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("limit, status", [("700.00", "pass"), ("650.00", "warn"), ("450.00", "fail")])
def test_power_capped_below_the_default_limit(limit, status):
    result = compute_stage({"power.limit": limit, "enforced.power.limit": limit, "power.default_limit": "700.00"})
    assert result.status == status, result.messages
    if status != "pass":
        assert f"{float(limit):.0f} W, below its default 700 W" in result.reason and "nvidia-smi -pl" in result.hint


def test_power_default_comes_from_the_datasheet_when_nvidia_smi_has_none():
    result = compute_stage({"power.limit": "500.00", "power.default_limit": "[N/A]"})
    assert result.status == "fail" and result.values["power_default_w"] == 700


def test_applications_clocks_set_low_fail():
    result = compute_stage({"clocks.applications.graphics": "1200", "clocks.default_applications.graphics": "1980"})
    assert result.status == "fail" and "1200 MHz, below their default 1980 MHz" in result.reason and "-rac" in result.hint


def test_clocks_held_by_a_user_setting_during_the_gemm_fail():
    result = compute_stage({"clocks.max.sm": "1980"}, gemm_samples(mask="0x0000000000000002", clock="990"))
    assert result.status == "fail"
    assert "held at 990 MHz of 1980 MHz" in result.reason
    assert "applications clocks setting (clocks locked or set low)" in result.values["clock_event_reasons"]


# --- a card already busy ----------------------------------------------------------------------------------------


def device_stage(info=H200, state=None, apps=None):
    probe = gpu_probe(device_properties=info, gpu_table=[dict({"uuid": UUID}, **(state or {}))], compute_apps=apps or [])
    return run_stage(device, make_checkup(probe))


def test_memory_held_by_another_process_fails_naming_it():
    result = device_stage(dict(H200, free_memory=100 * GB), apps=[{"gpu_uuid": UUID, "pid": 4242, "used_mib": 47000}])
    assert result.status == "fail"
    assert "GPU 0 (NVIDIA H200) has 45.6 GiB of 140 GiB taken" in result.reason and "pid 4242: 47000 MiB" in result.reason
    assert "idle machine" in result.hint


@pytest.mark.parametrize("utilization, status", [("0", "pass"), ("25", "warn"), ("97", "fail")])
def test_compute_already_running_on_the_card(utilization, status):
    result = device_stage(state={"utilization.gpu": utilization})
    assert result.status == status, result.messages


@pytest.mark.parametrize("mode, status", [("Default", "pass"), ("Exclusive_Process", "warn"), ("Prohibited", "fail")])
def test_compute_mode(mode, status):
    result = device_stage(state={"compute_mode": mode})
    assert result.status == status, result.messages
    if status == "warn":
        assert "one process at a time" in result.reason and "busy or unavailable" in result.hint


# --- between the GPUs of a lot ----------------------------------------------------------------------------------


def two_gpus(info, bus_gb_s=300.0, peer=True, nvlink=None, **observed):
    answers = [{"ok": True, "rank": rank, "bus_bandwidth_gb_s": bus_gb_s} for rank in (0, 1)]
    devices = [dict(info, index=index, uuid=f"GPU-{index}") for index in (0, 1)]
    probe = gpu_probe(device_count=2, run_collective=answers, peer_access=peer, nvlink_links=nvlink or {}, **observed)
    return run_stage(collectives, make_checkup(probe, facts={"devices": devices}, order=ordered(info["name"], 2)))


def nvlink(gb_s_per_direction: float, inactive: int = 0) -> dict:
    return {f"GPU-{index}": {"active": 18 - inactive, "inactive": inactive, "gb_s": gb_s_per_direction} for index in (0, 1)}


def test_healthy_nvlink_pair_passes_against_the_topology():
    result = two_gpus(H100, nvlink=nvlink(450.0))
    assert result.status == "pass", result.messages
    assert result.values["bus_bandwidth_expected_gb_s"] == 450.0 and result.values["bus_bandwidth_over"] == "NVLink 4"


def test_no_peer_access_on_an_sxm_baseboard_fails():
    result = two_gpus(H100, peer=False)
    assert result.status == "fail" and "GPU 0 cannot access GPU 1 directly" in result.reason and "NVLink 4" in result.reason
    assert "nvidia-smi topo -m" in result.hint


def test_nvlink_links_down_fail():
    result = two_gpus(H100, nvlink=nvlink(150.0, inactive=12))
    assert result.status == "fail" and "NVLink 4 carries 300 GB/s per GPU, the datasheet 900 GB/s" in result.reason


@pytest.mark.parametrize("bus, status", [(300.0, "pass"), (90.0, "warn"), (20.0, "fail")])
def test_all_reduce_far_below_the_topology(bus, status):
    result = two_gpus(H100, bus_gb_s=bus, nvlink=nvlink(450.0), environ={"NCCL_P2P_DISABLE": "1"})
    assert result.status == status, result.messages
    if status != "pass":
        assert f"{bus:.1f} GB/s bus bandwidth" in result.reason and "NCCL_P2P_DISABLE=1 is set" in result.hint


def test_bridged_cards_without_a_bridge_warn_and_pcie_cards_are_judged_on_pcie():
    nvl = two_gpus(dict(H100, name="NVIDIA H100 NVL", total_memory=100 * GB), bus_gb_s=20.0, peer=False)
    assert nvl.status == "warn" and "bridge H100 NVL cards can have is absent" in nvl.reason
    assert nvl.values["bus_bandwidth_over"].startswith("host memory over PCIe Gen5 x16")  # no peer access either
    rtx = two_gpus(dict(H100, name="NVIDIA GeForce RTX 4090", total_memory=25 * GB), bus_gb_s=12.0, peer=False)
    assert rtx.status == "pass", rtx.messages
    assert rtx.values["bus_bandwidth_expected_gb_s"] == pytest.approx(31.5 / 2, abs=0.1)  # no peer access: through host memory


# --- container limits (judged on injected readings; tests/test_diagnostics_limits.py reads real ones) -----------------


def test_memory_limit_below_the_floor_fails_and_below_the_gpus_warns():
    low = run_stage(memory, make_checkup(FakeProbe(cgroup_memory_limit=1 * GIB, mem_total_bytes=512 * GIB), "cpu"))
    assert low.status == "fail" and "may use 1.0 GiB of the host's 512 GiB" in low.reason and "--memory" in low.hint
    eight = [dict(H200, index=index) for index in range(8)]
    probe = gpu_probe(cgroup_memory_limit=64 * GIB, peak_memory={"peak_allocated": GB, "peak_reserved": GB, "total": 150 * GB, "extra": {}})
    result = run_stage(memory, make_checkup(probe, facts={"devices": eight}))
    assert result.status == "warn" and "less than the 1118 GiB of the visible GPUs" in result.reason


def io_stage(tmp_path, bundle=None, **observed):
    return run_stage(storage, make_checkup(FakeProbe(**observed), "cpu", bundle=bundle, results_dir=str(tmp_path / "runs")))


@pytest.mark.parametrize("quota, threads, status", [(None, 2, "pass"), (1.5, 2, "warn"), (0.5, 2, "fail")])
def test_cpu_quota_against_torch_threads(tmp_path, quota, threads, status):
    result = io_stage(
        tmp_path, cgroup_cpu_quota=quota, cpus_visible=2, cpus_allowed=2, torch_threads=threads, open_files_limit=(65536, 65536)
    )
    assert result.status == status, result.messages
    if status == "warn":
        assert "torch starts 2 threads (it sees 2 cores) but the container may use 1.5" in result.reason
        assert "OMP_NUM_THREADS=1" in result.hint


def test_workers_configured_beyond_the_cores_allowed_warn(tmp_path):
    bundle = read_bundle(str(write_bundle(tmp_path / "p", "[diagnostics]\ndataloader_workers = 8\n")))
    result = io_stage(
        tmp_path, bundle, cpus_visible=4, cpus_allowed=4, cgroup_cpu_quota=None, torch_threads=4, open_files_limit=(65536, 65536)
    )
    assert result.status == "warn" and "8 DataLoader workers and the main process share 4 allowed cores" in result.reason


@pytest.mark.parametrize(
    "limits, status, named",
    [((65536, 65536), "pass", None), ((1024, 1048576), "warn", "ulimit -n 1048576"), ((256, 256), "fail", "--ulimit nofile")],
)
def test_open_files_limit(tmp_path, limits, status, named):
    result = io_stage(tmp_path, open_files_limit=limits, cgroup_cpu_quota=None, cpus_visible=2, cpus_allowed=2, torch_threads=2)
    assert result.status == status, result.messages
    if named:
        assert named in result.hint and "Too many open files" in result.hint


def test_dev_shm_against_the_workers_configured(tmp_path):
    bundle = read_bundle(str(write_bundle(tmp_path / "p", "[diagnostics]\ndataloader_workers = 16\n")))
    result = io_stage(
        tmp_path, bundle, shm_stats={"total": 3 * GIB, "free": 3 * GIB}, open_files_limit=(65536, 65536), cgroup_cpu_quota=None
    )
    assert "/dev/shm holds 3072 MiB for 16 DataLoader workers configured" in " ".join(result.messages)
    assert result.values["dataloader_workers"] == 16


def test_dataloader_workers_must_be_a_whole_number(tmp_path):
    bundle = read_bundle(str(write_bundle(tmp_path, '[diagnostics]\ndataloader_workers = "many"\n')))
    assert "dataloader_workers must be a whole number" in bundle.error
