"""Collectives across processes and nodes (diagnostics/bdiag/distributed.py), for real on the
CPU with gloo: two torchrun "nodes" on loopback (c10d rendezvous, one process each, started
as two subprocesses), and faults — a node that never joins the all_reduce, a store that
never answers — that fail with a hint within the join timeout, not gloo's 30 minutes.
Every wait is bounded and stragglers are killed."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tests.conftest import REPO

sys.path.insert(0, str(REPO / "diagnostics"))

from bdiag import distributed
from bdiag.checkup import Checkup
from bdiag.probe import Probe
from bdiag.result import StageResult
from bdiag.stages import collectives

RANK_SCRIPT = REPO / "tests" / "collectives_rank.py"
BOUND = 240  # seconds any test process may take before it is killed and the test fails


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def torchrun_node(endpoint: str, run_id: str, folder: Path, *flags: str, env: dict) -> subprocess.Popen:
    command = [sys.executable, "-m", "torch.distributed.run", "--nnodes", "2", "--nproc-per-node", "1"]
    command += ["--rdzv-backend", "c10d", "--rdzv-endpoint", endpoint, "--rdzv-id", run_id, str(RANK_SCRIPT), str(folder), *flags]
    return subprocess.Popen(
        command,
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


@contextlib.contextmanager
def two_nodes(tmp_path: Path, second_node_flags: tuple = (), env: dict | None = None):
    endpoint, run_id = f"127.0.0.1:{free_port()}", f"test-{os.getpid()}-{free_port()}"
    nodes = [
        torchrun_node(endpoint, run_id, tmp_path, env=env or {}),
        torchrun_node(endpoint, run_id, tmp_path, *second_node_flags, env=env or {}),
    ]
    try:
        yield nodes
    finally:
        for node in nodes:
            kill_tree(node.pid)
            node.communicate(timeout=30)


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (torchrun starts its workers in sessions of their own)."""
    parents = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            parents[int(stat.parent.name)] = int(stat.read_text().rsplit(")", 1)[1].split()[1])
    found, frontier = [], [pid]
    while frontier:
        children = [child for child, parent in parents.items() if parent in frontier]
        found += children
        frontier = children
    return found


def kill_tree(pid: int) -> None:
    for victim in [pid, *descendants(pid)]:
        with contextlib.suppress(ProcessLookupError):
            os.kill(victim, signal.SIGKILL)


def finish(node: subprocess.Popen) -> tuple[int, str]:
    output, _ = node.communicate(timeout=BOUND)
    return node.returncode, output


def verdicts(folder: Path) -> list[dict]:
    return [json.loads(path.read_text()) for path in sorted(folder.glob("rank*.json"))]


@pytest.mark.slow
def test_two_torchrun_nodes_all_reduce_and_report_per_node(tmp_path):
    with two_nodes(tmp_path) as nodes:
        outcomes = [finish(node) for node in nodes]
    assert [code for code, _ in outcomes] == [0, 0], outcomes
    found = verdicts(tmp_path)
    assert len(found) == 2
    for verdict in found:
        job = verdict["values"]["job"]
        assert verdict["status"] == "pass", verdict
        assert job["backend"] == "gloo" and job["world"] == 2
        assert {node: entry["ranks"] for node, entry in job["nodes"].items()} == {"0": [0], "1": [1]}
        assert job["bus_bandwidth_gb_s"] > 0
        assert "among 2 ranks on 2 node(s) ok" in verdict["summary"]
        assert "node 0 (" in " ".join(verdict["messages"]) and "node 1 (" in " ".join(verdict["messages"])
    assert sorted(verdict["values"]["job"]["rank"] for verdict in found) == [0, 1]


@pytest.mark.slow
def test_a_node_that_never_joins_fails_the_other_within_the_join_timeout(tmp_path):
    # the second node's diagnostics hang before stage 10 (a stuck driver, a stage that never ends)
    with two_nodes(tmp_path, ("--hang",), env={distributed.TIMEOUT_VARIABLE: "4"}) as nodes:
        code, output = finish(nodes[0])
        assert nodes[1].poll() is None  # still hanging: the context kills it
    assert code != 0, output
    (verdict,) = verdicts(tmp_path)
    job = verdict["values"]["job"]
    other = 1 - job["rank"]
    assert verdict["status"] == "fail"
    assert f"rank(s) {other} of 2 never joined the all_reduce within 4 s (node(s) {other})" in verdict["messages"][0]
    assert job["missing_ranks"] == [other]
    assert f"diagnostics of node(s) {other}" in verdict["hint"] and distributed.TIMEOUT_VARIABLE in verdict["hint"]


def checkup_without_torchrun(environ: dict) -> Checkup:
    class Observed(Probe):
        def environ(self):
            return environ

    checkup = Checkup(probe=Observed(), backend="cpu", backend_source="test", bundle=None, results_dir=None)
    checkup.torch = torch
    return checkup


def rank_environment(rank: int, port: int, **extra: str) -> dict:
    return {
        **os.environ,
        "RANK": str(rank),
        "WORLD_SIZE": "2",
        "LOCAL_RANK": "0",
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(port),
        **extra,
    }


@pytest.mark.slow
def test_rank_0_alone_names_the_rank_that_never_came():
    environ = rank_environment(0, free_port(), **{distributed.TIMEOUT_VARIABLE: "2"})
    result = StageResult("collectives", 10)
    collectives.run(checkup_without_torchrun(environ), result)
    assert result.status == "fail"
    assert "rank(s) 1 of 2 never joined the all_reduce within 2 s (node(s) 1)" in result.reason
    assert result.values["job"]["missing_ranks"] == [1]


@pytest.mark.slow
def test_a_store_that_never_answers_fails_in_bounded_time():
    environ = rank_environment(1, free_port(), TORCHELASTIC_USE_AGENT_STORE="True", **{distributed.TIMEOUT_VARIABLE: "2"})
    result = StageResult("collectives", 10)
    collectives.run(checkup_without_torchrun(environ), result)
    assert result.status == "fail"
    assert "did not answer within 2 s: the node of rank 0 never started it" in result.reason
    assert "127.0.0.1:" in result.hint


# --- the logic, without processes -----------------------------------------------------------
def test_only_a_complete_torchrun_environment_of_two_ranks_or_more_counts():
    full = {"RANK": "3", "WORLD_SIZE": "8", "LOCAL_RANK": "1", "MASTER_ADDR": "node0", "MASTER_PORT": "29501", "LOCAL_WORLD_SIZE": "2"}
    launch = distributed.launch_from(full)
    assert (launch.rank, launch.world, launch.node, launch.master, launch.join_timeout) == (3, 8, 1, "node0:29501", 120.0)
    assert launch.node_of(7) == 3
    assert distributed.launch_from({**full, "WORLD_SIZE": "1"}) is None
    assert distributed.launch_from({k: v for k, v in full.items() if k != "MASTER_PORT"}) is None
    assert distributed.launch_from({**full, "RANK": "x"}) is None
    assert distributed.launch_from({**full, distributed.TIMEOUT_VARIABLE: "-5"}).join_timeout == 120.0
    assert distributed.launch_from({**full, distributed.TIMEOUT_VARIABLE: "7.5", "GROUP_RANK": "2"}).node == 2


def test_more_processes_than_gpus_on_a_node_fails_before_any_process_starts():
    class TwoGpus(Probe):
        def device_count(self, torch_):
            return 2

        def cuda_available(self, torch_):
            return True

    checkup = Checkup(probe=TwoGpus(), backend="cuda", backend_source="test", bundle=None, results_dir=None)
    checkup.torch = torch
    launch = distributed.Launch(rank=2, world=4, local_rank=2, local_world=4, node=0, master="a:1", join_timeout=5)
    result = StageResult("collectives", 10)
    distributed.run(checkup, result, launch, local=None)
    assert result.status == "fail" and "LOCAL_RANK 2, but this node shows 2 cuda device(s)" in result.reason
    assert "--nproc-per-node" in result.hint


def test_this_nodes_own_check_folds_into_the_verdict():
    launch = distributed.Launch(rank=0, world=2, local_rank=0, local_world=1, node=0, master="a:1", join_timeout=5)
    peers = [{"rank": 0, "node": 0, "host": "a"}, {"rank": 1, "node": 1, "host": "b"}]
    result = StageResult("collectives", 10)
    distributed.judge(result, launch, "nccl", {"ok": True, "peers": peers, "bus_bandwidth_gb_s": 41.5})
    assert result.summary == "nccl all_reduce among 2 ranks on 2 node(s) ok, bus 41.50 GB/s"

    def slow_local(checkup, inner):
        inner.values["bus_bandwidth_gb_s"] = 3.0
        inner.summary = "nccl all_reduce × 2 ok, bus 3.0 GB/s"
        inner.warn("bus bandwidth 3.0 GB/s is low for NVLink", "Check the topology with nvidia-smi topo -m.")

    distributed.this_node(None, result, slow_local)
    assert result.status == "warn" and result.reason == "this node: bus bandwidth 3.0 GB/s is low for NVLink"
    assert result.values["this_node"] == {"bus_bandwidth_gb_s": 3.0} and "nvidia-smi topo" in result.hint
    assert result.summary.endswith("; this node: nccl all_reduce × 2 ok, bus 3.0 GB/s")


def test_a_wrong_sum_and_a_lost_store_fail_with_their_hints():
    launch = distributed.Launch(rank=1, world=2, local_rank=0, local_world=1, node=1, master="a:1", join_timeout=5)
    wrong = StageResult("collectives", 10)
    distributed.judge(wrong, launch, "gloo", {"ok": False, "value": 2.0, "expected": 3.0})
    assert "rank 1 got 2.0, expected 3.0" in wrong.reason and "NCCL_DEBUG=INFO" in wrong.hint
    lost = StageResult("collectives", 10)
    distributed.judge(lost, launch, "gloo", {"ok": False, "lost": "a:1", "error": "DistNetworkError: reset"})
    assert "went away while this rank waited for the others" in lost.reason and "diagnostics of the other nodes" in lost.hint
