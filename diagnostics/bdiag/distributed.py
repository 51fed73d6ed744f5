"""Collectives across processes and nodes: under torchrun, the collectives stage takes part
in one all-reduce among every rank of the job and reports the ranks per node.

torchrun (or any launcher that sets RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and
MASTER_PORT) starts one diagnostics process per rank. Each runs its part in a fresh
process (bdiag/distributed_worker.py): it announces itself in the job's store, waits at
most BUNDLE_DIAG_JOIN_TIMEOUT seconds (default 120) for the others, all-reduces a tensor
whose sum it knows and measures the bus bandwidth. A rank that never joins fails the
stage with its number and node, in seconds rather than after gloo's 30 or NCCL's 10
minutes; a worker that does not return in time is killed. With one process per node on
a node of several GPUs, this node's own check (``local``) runs after the job's.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass

from bdiag import FOLDER, transport
from bdiag.result import FAIL, WARN, StageResult

ENVIRONMENT = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")
TIMEOUT_VARIABLE = "BUNDLE_DIAG_JOIN_TIMEOUT"
DEFAULT_TIMEOUT = 120.0
GRACE = 60.0  # seconds the worker may take beyond twice the join timeout (start-up, the bandwidth run)


@dataclass(frozen=True)
class Launch:
    rank: int
    world: int
    local_rank: int
    local_world: int
    node: int
    master: str
    join_timeout: float

    def node_of(self, rank: int) -> int:
        """torchrun numbers ranks node by node: rank // processes per node."""
        return rank // self.local_world


def launch_from(environ) -> Launch | None:
    """The job this process is a rank of, or None outside torchrun (or in a job of one rank)."""
    if not all(environ.get(name) for name in ENVIRONMENT):
        return None
    try:
        rank, world, local_rank = (int(environ[name]) for name in ENVIRONMENT[:3])
        local_world = max(1, int(environ.get("LOCAL_WORLD_SIZE") or 1))
        node = int(environ.get("GROUP_RANK") or rank // local_world)
    except ValueError:
        return None
    if world < 2:
        return None
    return Launch(rank, world, local_rank, local_world, node, f"{environ['MASTER_ADDR']}:{environ['MASTER_PORT']}", _timeout(environ))


def _timeout(environ) -> float:
    try:
        value = float(environ.get(TIMEOUT_VARIABLE, DEFAULT_TIMEOUT))
    except ValueError:
        return DEFAULT_TIMEOUT
    return value if value > 0 else DEFAULT_TIMEOUT


def run(checkup, result, launch: Launch, local) -> None:
    """The job's all_reduce from this rank, then (one process per node) ``local``, this node's own check."""
    probe, torch = checkup.probe, checkup.torch
    if not torch.distributed.is_available():
        result.fail("this torch build has no torch.distributed", "Install a torch build with distributed support.")
        return
    count = probe.device_count(torch) if checkup.gpu and probe.cuda_available(torch) else 0
    if checkup.gpu and launch.local_rank >= count:
        result.fail(
            f"LOCAL_RANK {launch.local_rank}, but this node shows {count} {checkup.backend} device(s)",
            "Start at most one process per GPU: torchrun --nproc-per-node no larger than the GPUs of the node.",
        )
        return
    backend, device = ("nccl", "cuda") if checkup.gpu else ("gloo", "cpu")
    answer = run_worker(probe.executable(), backend, device, launch.join_timeout, probe.environ())
    judge(result, launch, backend, answer)
    if result.status != FAIL and backend == "nccl":
        transport.judge(result, [answer.get("log", "")], probe.rdma_devices(), probe.environ())
    if result.status != FAIL and launch.local_world == 1 and count >= 2:
        this_node(checkup, result, local)


def run_worker(executable: str, backend: str, device: str, timeout: float, environ) -> dict:
    """Run bdiag/distributed_worker.py with the job's ``environ`` (NCCL's INFO lines on); its answer with
    those lines under ``log``, or why there is none. Never waits past the bound."""
    folder = tempfile.mkdtemp(prefix="bundle-distributed-")
    out, log = os.path.join(folder, "answer.json"), os.path.join(folder, "worker.log")
    bound = 2 * timeout + GRACE
    try:
        with open(log, "w", encoding="utf-8") as handle:
            command = [executable, os.path.join(FOLDER, "bdiag", "distributed_worker.py"), backend, device, str(timeout), out]
            environment = transport.debug_environment(environ)
            process = subprocess.Popen(command, env=environment, stdout=handle, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
            try:
                code = process.wait(timeout=bound)
            except subprocess.TimeoutExpired:
                code = None
            finally:
                if process.poll() is None:
                    process.kill()
                    process.wait()
        if code is None:
            return {"ok": False, "error": f"this rank's all_reduce did not return within {bound:.0f} s and was stopped"}
        with open(log, encoding="utf-8", errors="replace") as handle:
            output = handle.read()
        if os.path.isfile(out):
            with open(out, encoding="utf-8") as handle:
                return dict(json.load(handle), log=transport.nccl_lines(output))
        tail = output.strip().splitlines()[-3:]
        return {"ok": False, "error": " | ".join(tail) or f"the worker exited {code} without an answer"}
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def judge(result, launch: Launch, backend: str, answer: dict) -> None:
    job = {"backend": backend, "world": launch.world, "rank": launch.rank, "node": launch.node, "master": launch.master}
    result.values["job"] = job
    if answer.get("missing") or answer.get("unreachable") or answer.get("lost"):
        _never_joined(result, launch, answer, job)
        return
    if not answer.get("ok"):
        detail = answer.get("error") or f"rank {launch.rank} got {answer.get('value')}, expected {answer.get('expected')}"
        result.fail(
            f"the {backend} all_reduce among {launch.world} ranks failed: {detail}",
            "Rerun with NCCL_DEBUG=INFO to see the transport that fails; NCCL_SOCKET_IFNAME names the network between the nodes. "
            "Inside containers: --ipc=host or a large /dev/shm.",
        )
        return
    per_node: dict = {}
    for peer in answer.get("peers", []):
        per_node.setdefault(peer["node"], {"host": peer["host"], "ranks": []})["ranks"].append(peer["rank"])
    job.update(nodes={str(node): entry for node, entry in sorted(per_node.items())}, bus_bandwidth_gb_s=answer.get("bus_bandwidth_gb_s"))
    for node, entry in sorted(per_node.items()):
        result.note(f"node {node} ({entry['host']}): rank(s) {', '.join(map(str, entry['ranks']))}")
    result.summary = (
        f"{backend} all_reduce among {launch.world} ranks on {len(per_node)} node(s) ok, bus {answer.get('bus_bandwidth_gb_s', 0):.2f} GB/s"
    )


def _never_joined(result, launch: Launch, answer: dict, job: dict) -> None:
    """The fault a job meets most: a rank that never comes (its node failed earlier, hangs, or cannot reach the others)."""
    waited = f"{launch.join_timeout:g} s"
    if answer.get("missing"):
        missing = answer["missing"]
        where = "node(s) " + ", ".join(map(str, sorted({launch.node_of(rank) for rank in missing})))
        what = f"rank(s) {', '.join(map(str, missing))} of {launch.world} never joined the all_reduce within {waited} ({where})"
        job.update(missing_ranks=missing)
    elif answer.get("unreachable"):
        where = "the node of rank 0"
        what = f"the job's store at {answer['unreachable']} did not answer within {waited}: {where} never started it"
    else:
        where = "the other nodes"
        what = f"the job's store at {answer['lost']} went away while this rank waited for the others: the node that held it stopped"
    result.fail(
        what,
        f"Look at the diagnostics of {where}: an earlier stage may have failed there, it may hang, or it never started. Check that "
        f"every node reaches {launch.master} (firewall, security group, the headless Service); raise {TIMEOUT_VARIABLE} "
        f"(now {waited}) when the nodes start far apart.",
    )


def this_node(checkup, result, local) -> None:
    """This node's own check after the job's, its verdict folded into the stage's."""
    inner = StageResult(result.name, result.number)
    local(checkup, inner)
    result.values["this_node"] = inner.values
    if inner.status in (FAIL, WARN):
        (result.fail if inner.status == FAIL else result.warn)(f"this node: {inner.reason}", inner.hint)
    else:
        result.note(f"this node: {inner.status} {inner.summary or inner.reason}".rstrip())
    if inner.summary:
        result.summary = f"{result.summary}; this node: {inner.summary}"
