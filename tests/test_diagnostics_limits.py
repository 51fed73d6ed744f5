"""Container limits read for real: the diagnostics run inside real containers started with
--memory, --cpus, --ulimit nofile and --shm-size, and the probe's readers against real cgroup
trees and this host's own limits."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from tests import dockerenv
from tests.diagnostics_support import DIAGNOSTICS

# isort: split
from bdiag.probe import Probe
from bdiag.probe_host import cpu_quota, memory_limit

MIB, GIB = 1 << 20, 1 << 30


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


# --- the readers on real cgroup trees ---------------------------------------------------------------


def test_cgroup_v1_as_a_container_sees_it(tmp_path):
    """Docker on cgroup v1: the container's own cgroup is mounted at the controller's root; the path
    /proc/self/cgroup names (/docker/<id>) does not exist inside."""
    write(tmp_path / "memory" / "memory.limit_in_bytes", "1572864000\n")
    write(tmp_path / "cpu,cpuacct" / "cpu.cfs_quota_us", "150000\n")
    write(tmp_path / "cpu,cpuacct" / "cpu.cfs_period_us", "100000\n")
    proc = "4:memory:/docker/751001528cb4\n3:cpu,cpuacct:/docker/751001528cb4\n0::/docker/751001528cb4\n"
    assert memory_limit(str(tmp_path), proc) == 1572864000
    assert cpu_quota(str(tmp_path), proc) == 1.5


def test_cgroup_v1_nested_limits_take_the_smallest(tmp_path):
    write(tmp_path / "memory" / "memory.limit_in_bytes", "9223372036854771712\n")  # the host: unlimited
    write(tmp_path / "memory" / "jobs" / "memory.limit_in_bytes", str(8 * GIB))
    write(tmp_path / "memory" / "jobs" / "one" / "memory.limit_in_bytes", str(16 * GIB))
    write(tmp_path / "cpu" / "cpu.cfs_quota_us", "-1\n")
    write(tmp_path / "cpu" / "cpu.cfs_period_us", "100000\n")
    proc = "4:memory:/jobs/one\n1:cpu:/jobs/one\n"
    assert memory_limit(str(tmp_path), proc) == 8 * GIB
    assert cpu_quota(str(tmp_path), proc) is None


def test_cgroup_v2_walks_from_its_cgroup_to_the_root(tmp_path):
    write(tmp_path / "cgroup.controllers", "cpu memory\n")
    write(tmp_path / "system.slice" / "memory.max", "max\n")
    write(tmp_path / "system.slice" / "cpu.max", "max 100000\n")
    write(tmp_path / "system.slice" / "box" / "memory.max", str(12 * GIB))
    write(tmp_path / "system.slice" / "box" / "cpu.max", "250000 100000\n")
    proc = "0::/system.slice/box\n"
    assert memory_limit(str(tmp_path), proc) == 12 * GIB
    assert cpu_quota(str(tmp_path), proc) == 2.5
    assert memory_limit(str(tmp_path), "0::/system.slice\n") is None


# --- this host's own limits, against an independent reader --------------------------------------------------


def test_open_files_limit_is_what_the_shell_reports():
    shell = subprocess.run(["sh", "-c", "ulimit -Sn; ulimit -Hn"], capture_output=True, text=True, check=True).stdout.split()
    expected = tuple(None if value == "unlimited" else int(value) for value in shell)
    assert Probe().open_files_limit() == expected


def test_a_lowered_open_files_limit_fails_the_io_stage_for_real(tmp_path):
    """The real io stage in a fresh process whose RLIMIT_NOFILE was lowered (as `ulimit -n 200` would)."""
    script = f"""
import json, resource, sys
resource.setrlimit(resource.RLIMIT_NOFILE, (200, 200))
sys.path.insert(0, {str(DIAGNOSTICS)!r})
import torch
from bdiag.checkup import Checkup
from bdiag.probe import Probe
from bdiag.result import StageResult
from bdiag.stages import storage
checkup = Checkup(probe=Probe(), backend="cpu", backend_source="test", bundle=None, results_dir={str(tmp_path / "runs")!r})
checkup.torch = torch
result = StageResult("io", 8)
storage.run(checkup, result)
print(json.dumps(result.as_dict(), default=str))
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600)
    io = json.loads(done.stdout.splitlines()[-1])
    assert io["status"] == "fail", done.stderr
    assert io["values"]["nofile_soft"] == io["values"]["nofile_hard"] == 200
    assert "open files are limited to 200 (hard limit)" in " ".join(io["messages"])
    assert io["values"]["dataloader"]["batches"] == 8  # the DataLoader's two workers still ran under the limit


def test_memory_and_cpu_readings_of_this_host_match_its_cgroup_files():
    probe = Probe()
    assert probe.cpus_visible() == os.cpu_count()
    assert probe.cpus_allowed() == len(os.sched_getaffinity(0))
    meminfo = Path("/proc/meminfo").read_text().split("\n", 1)[0].split()
    assert probe.mem_total_bytes() == int(meminfo[1]) * 1024
    limit = probe.cgroup_memory_limit()
    assert limit is None or 0 < limit < probe.mem_total_bytes() * 64


# --- inside real containers --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def python_image(docker_client, debian_python_image_factory):
    """A Debian image whose python3 has this interpreter's minor, so that this host's torch loads in it."""
    minor = f"{sys.version_info.major}.{sys.version_info.minor}"
    suites = [suite for suite, version in dockerenv.SUITES.items() if version == minor]
    if not suites:
        pytest.fail(f"no local Debian base image ships Python {minor} (tests/dockerenv.py SUITES): run the tests with 3.11 or 3.13")
    return debian_python_image_factory(suites[0])


def run_in_container(docker_client, image: str, out: Path, **limits) -> tuple[int, dict, str]:
    """run.py --backend cpu inside a container with ``limits``, torch mounted read-only from this host."""
    import torch

    volumes = {
        str(Path(torch.__file__).resolve().parents[1]): {"bind": "/opt/site", "mode": "ro"},
        str(DIAGNOSTICS): {"bind": "/opt/diagnostics", "mode": "ro"},
        str(out): {"bind": "/out", "mode": "rw"},
    }
    command = ["python3", "/opt/diagnostics/run.py", "--backend", "cpu", "--keep-going", "--json", "/out/report.json"]
    environment = {"PYTHONPATH": "/opt/site", "PYTHONDONTWRITEBYTECODE": "1"}
    container = docker_client.containers.create(image, command, volumes=volumes, environment=environment, **limits)
    try:
        container.start()
        code = int(container.wait(timeout=600)["StatusCode"])
        logs = container.logs().decode("utf-8", errors="replace")
    finally:
        container.remove(force=True)
    return code, json.loads((out / "report.json").read_text()), logs


@pytest.mark.docker
def test_tight_container_limits_are_caught(docker_client, python_image, tmp_path):
    import docker.types

    code, report, logs = run_in_container(
        docker_client,
        python_image,
        tmp_path,
        mem_limit="1500m",
        nano_cpus=1_000_000_000,
        ulimits=[docker.types.Ulimit(name="nofile", soft=256, hard=256)],
        shm_size="64m",
    )
    stages = {stage["name"]: stage for stage in report["stages"]}
    memory, io = stages["memory"], stages["io"]
    assert code == 17 and report["first_failure"] == "memory", logs
    assert memory["values"]["cgroup_memory_limit"] == 1500 * MIB
    assert "may use 1.5 GiB" in memory["messages"][0]
    assert io["status"] == "fail"
    assert io["values"]["cpu_quota"] == 1.0 and io["values"]["nofile_hard"] == 256 and io["values"]["shm_total"] == 64 * MIB
    joined = " ".join(io["messages"])
    assert "/dev/shm is only 64 MiB" in joined and "open files are limited to 256 (hard limit)" in joined
    threads = io["values"]["torch_threads"]
    assert threads <= 1 or f"torch starts {threads} threads" in joined
    assert "Traceback" not in logs


@pytest.mark.docker
def test_generous_container_limits_pass(docker_client, python_image, tmp_path):
    import docker.types

    cores = len(os.sched_getaffinity(0))
    files = min(65536, resource.getrlimit(resource.RLIMIT_NOFILE)[1])  # the engine refuses more than its own limit, which this host shares
    code, report, logs = run_in_container(
        docker_client,
        python_image,
        tmp_path,
        mem_limit="10g",
        nano_cpus=cores * 1_000_000_000,
        ulimits=[docker.types.Ulimit(name="nofile", soft=files, hard=files)],
        shm_size="2g",
    )
    stages = {stage["name"]: stage for stage in report["stages"]}
    assert stages["memory"]["values"]["cgroup_memory_limit"] == 10 * GIB
    assert stages["memory"]["status"] == "skip", stages["memory"]["messages"]  # nothing to judge on device memory, no limit problem
    assert stages["io"]["values"]["cpu_quota"] == cores and stages["io"]["values"]["nofile_soft"] == files
    assert stages["io"]["status"] == "pass", stages["io"]["messages"]
    assert code == 0, logs
