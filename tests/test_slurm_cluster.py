"""`bundler job slurm --runtime docker` submitted with sbatch to a real Slurm cluster on loopback
(tests/slurmcluster.py: Debian's slurmctld, two slurmd, munge; node 2 with its own hostname and
dockerd), running the example's real CPU image: the job completes, the diagnostics run before
the entry on every node, torchrun joins both nodes, the runs come back to the submit folder and
pass `bundler runs verify`; a node that never joins and an image a node lacks fail the job
within their bounds, naming the node."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests import dockerenv, slurmcluster
from tests.conftest import run_cli
from tests.job_support import copy_project, job

pytestmark = [pytest.mark.docker, pytest.mark.slow, pytest.mark.slurm]
JOB_TIMEOUT = 900  # two shared cores: the diagnostics and the pilot of two nodes


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, cpu_image, docker_client):
    """The loopback cluster with the example's CPU image on both nodes' engines (one per module)."""
    dockerenv.require(slurmcluster.missing())
    running = slurmcluster.start(tmp_path_factory.mktemp("slurm"))
    try:
        copy_image(cpu_image[2], ["docker", "-H", running.node2_docker, "load", "-q"])
        yield running
    finally:
        running.stop()


def copy_image(tag: str, load: list[str], env: dict | None = None) -> None:
    """``tag`` from the machine's Docker into another engine: `docker save` streamed into ``load``."""
    save = subprocess.Popen(["docker", "save", tag], stdout=subprocess.PIPE)
    loaded = subprocess.run(load, stdin=save.stdout, capture_output=True, timeout=600, env=env)
    assert save.wait(timeout=60) == 0 and loaded.returncode == 0, loaded.stderr


def submitted(cluster, cpu_image, folder: Path, *options: str, env: dict | None = None, image: str | None = None, runtime: str = "docker"):
    """A copy of the example with a Slurm job written by `bundler job slurm --runtime RUNTIME OPTIONS`, submitted and waited for:
    (project, job id, state, exit code, seconds, the job's output)."""
    master, _, tag = cpu_image
    project = copy_project(master, folder, lots=2)
    completed, result = job(project, "slurm", "--runtime", runtime, "--image", image or tag, *options)
    assert completed.returncode == 0, completed.stderr
    script = Path(result["path"])
    subprocess.run(["bash", "-n", str(script)], check=True)
    job_id = cluster.submit(script, cwd=project, env=env)
    state, code, seconds = cluster.wait(job_id, JOB_TIMEOUT)
    output = (project / f"{result['name']}-{job_id}.out").read_text(errors="replace")
    return project, job_id, state, code, seconds, output


def started(project: Path, job_id: str) -> dict[str, int]:
    """The steps each node started, as `step.node` -> when (ns), from the job's markers under runs/."""
    folder = project / "runs" / f".started-{job_id}"
    return {path.name: path.stat().st_mtime_ns for path in folder.iterdir()}


def new_runs(project: Path) -> list[Path]:
    return sorted(path for path in (project / "runs").iterdir() if path.is_dir() and (path / "manifest.json").is_file())


def verified(run: Path) -> dict:
    completed = run_cli("runs", "verify", str(run), "--json")
    assert completed.returncode == 0, completed.stdout[-2000:] + completed.stderr[-2000:]
    return json.loads(completed.stdout)


def test_one_node_job_runs_diagnostics_then_the_pilot_and_its_run_verifies(cluster, cpu_image, tmp_path):
    project, job_id, state, code, seconds, output = submitted(cluster, cpu_image, tmp_path / "one", "--nodes", "1")
    assert (state, code) == ("COMPLETED", "0:0"), output[-4000:]
    marks = started(project, job_id)
    assert set(marks) == {"diagnostics.127.0.0.1", "entry.127.0.0.1"} and marks["diagnostics.127.0.0.1"] < marks["entry.127.0.0.1"]
    runs = new_runs(project)
    assert len(runs) == 1, output[-4000:]
    assert verified(runs[0])["ok"] is True
    assert os.stat(runs[0]).st_uid == os.getuid()  # the container ran as the submitting user
    assert subprocess.run(["docker", "ps", "-aq", "--filter", f"name=bundle-{job_id}-"], capture_output=True, text=True).stdout == ""
    print(f"slurm one-node job: {seconds:.1f} s (cluster start {cluster.started_s:.1f} s)")


def test_two_node_job_joins_both_nodes_and_both_runs_come_back(cluster, cpu_image, tmp_path):
    project, job_id, state, code, seconds, output = submitted(cluster, cpu_image, tmp_path / "two", "--nodes", "2")
    assert (state, code) == ("COMPLETED", "0:0"), output[-4000:]
    marks = started(project, job_id)
    for node in slurmcluster.NODES:
        assert marks[f"diagnostics.{node}"] < marks[f"entry.{node}"]
    assert "all_reduce among 2 ranks on 2 node(s) ok" in output, output[-4000:]
    runs = new_runs(project)
    assert len(runs) == 2, output[-4000:]  # the pilot is not distributed: each of the world's 2 ranks makes its own run
    assert all(verified(run)["ok"] for run in runs)
    print(f"slurm two-node job: {seconds:.1f} s")


def test_a_node_that_never_joins_fails_the_job_within_the_join_timeout_naming_it(cluster, cpu_image, tmp_path):
    pid = int((cluster.folder / "node2" / "dockerd.pid").read_text())
    os.kill(pid, signal.SIGSTOP)  # node 2's engine hangs: its container never starts
    try:
        project, job_id, state, code, seconds, output = submitted(
            cluster, cpu_image, tmp_path / "stuck", "--nodes", "2", "--join-timeout", "15"
        )
    finally:
        os.kill(pid, signal.SIGCONT)
    assert state == "FAILED" and code != "0:0"
    assert "node(s) 127.0.0.2 never started it" in output and "join timeout 15 s" in output, output[-4000:]
    assert "diagnostics.127.0.0.2" not in started(project, job_id)
    print(f"slurm join-timeout verdict: {seconds:.1f} s (join timeout 15 s)")


def test_an_image_missing_on_a_node_fails_before_any_entry_naming_node_and_reference(cluster, cpu_image, docker_client, tmp_path):
    _, _, tag = cpu_image
    only_here = "bundler-test/example-cpu:node1-only"
    docker_client.images.get(tag).tag(only_here)
    try:
        project, job_id, state, code, seconds, output = submitted(cluster, cpu_image, tmp_path / "missing", "--nodes", "2", image=only_here)
    finally:
        docker_client.images.remove(only_here)
    assert state == "FAILED" and code != "0:0"
    assert f"node 127.0.0.2 has no image {only_here}" in output, output[-4000:]
    marks = started(project, job_id)  # how soon it fails is bench/bench_slurm_join.py's to measure
    assert "diagnostics.127.0.0.2" not in marks and not any(mark.startswith("entry.") for mark in marks), marks
    print(f"slurm missing-image verdict: {seconds:.1f} s")


def test_the_podman_script_runs_on_one_node_with_debians_podman(cluster, cpu_image, podman, tmp_path):
    service = Path(podman.env["CONTAINER_HOST"].removeprefix("unix://")).parent  # the suite's Podman storage and limits
    env = {"CONTAINERS_CONF": str(service / "containers.conf"), "CONTAINERS_STORAGE_CONF": str(service / "storage.conf")}
    copy_image(cpu_image[2], ["podman", "load", "-q"], env={**os.environ, **env})
    project, job_id, state, code, seconds, output = submitted(
        cluster, cpu_image, tmp_path / "podman", "--nodes", "1", env=env, runtime="podman"
    )
    assert (state, code) == ("COMPLETED", "0:0"), output[-4000:]
    marks = started(project, job_id)
    assert marks["diagnostics.127.0.0.1"] < marks["entry.127.0.0.1"]
    runs = new_runs(project)
    assert len(runs) == 1 and verified(runs[0])["ok"] is True
    print(f"slurm one-node podman job: {seconds:.1f} s")


def test_a_cancelled_job_leaves_no_container_behind(cluster, cpu_image, tmp_path):
    master, _, tag = cpu_image
    project = copy_project(master, tmp_path / "cancelled", lots=1)
    completed, result = job(project, "slurm", "--runtime", "docker", "--image", tag)
    assert completed.returncode == 0, completed.stderr
    job_id = cluster.submit(Path(result["path"]), cwd=project)
    name = f"bundle-{job_id}-diagnostics-0"
    containers = ["docker", "ps", "-aq", "--filter", f"name={name}"]
    deadline = time.monotonic() + 300
    while not subprocess.run(containers, capture_output=True, text=True).stdout.strip():
        assert time.monotonic() < deadline, f"{name} never started"
        time.sleep(0.5)
    subprocess.run(["scancel", job_id], env=cluster.env, check=True, timeout=30)
    state, _, _ = cluster.wait(job_id, 120)
    assert state == "CANCELLED"
    deadline = time.monotonic() + 60
    while subprocess.run(containers, capture_output=True, text=True).stdout.strip():  # --rm, or the trap when the client was killed
        assert time.monotonic() < deadline, f"{name} still there a minute after scancel"
        time.sleep(0.5)
