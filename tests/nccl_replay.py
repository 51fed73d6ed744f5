"""NCCL's INFO lines of real shapes (tests/captures/nccl/) replayed through the real collectives
stage: the probe's interpreter is tests/fake_nccl_worker.py, which prints a capture the way NCCL
prints it (only with NCCL_DEBUG=INFO, which the stage must set), and /sys/class/infiniband is a
folder of the scenario's adapters. A two-node capture goes through the job's path (torchrun's
variables, bdiag/distributed.py's worker), a one-node capture through this machine's 2-rank check.

A verdict is right when the stage's status is the expected one, its summary names the transport
NCCL chose, and a warning's message or hint names the cause.
``python -m tests.nccl_replay`` prints right/total (the figure in docs/benchmarks.md).
"""

from __future__ import annotations

import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from tests.diagnostics_support import NAMES, gpu_probe, make_checkup

# isort: split
from bdiag.probe import Probe
from bdiag.result import StageResult
from bdiag.stages import collectives

CAPTURES = Path(__file__).resolve().parent / "captures" / "nccl"
WORKER = Path(__file__).resolve().parent / "fake_nccl_worker.py"


@dataclass(frozen=True)
class Scenario:
    capture: str  # a file of CAPTURES
    nodes: int  # 2: the job's all_reduce between two nodes; 1: this node's two GPUs
    rdma: tuple  # the adapters /sys/class/infiniband lists
    expect: str  # pass | warn
    transport: str  # what the summary must name
    cause: str = ""  # a phrase the warning's message or hint must hold

    @property
    def id(self) -> str:
        return f"{self.capture.removesuffix('.txt')}-rdma{len(self.rdma)}"


MLX = ("mlx5_0", "mlx5_1")
SCENARIOS = [
    Scenario("ib-gdrdma-2node.txt", 2, MLX + ("mlx5_2", "mlx5_3"), "pass", "NET/IB"),
    Scenario("ib-nogdr-2node.txt", 2, MLX[:1], "pass", "NET/IB"),
    Scenario("roce-2node.txt", 2, MLX, "pass", "NET/IB"),
    Scenario("efa-ofi-2node.txt", 2, ("rdmap16s27", "rdmap32s27"), "pass", "NET/AWS Libfabric"),
    Scenario("socket-no-libibverbs-2node.txt", 2, MLX[:1], "warn", "NET/Socket", 'fabric = "infiniband"'),
    Scenario("socket-no-libibverbs-2node.txt", 2, (), "pass", "NET/Socket"),  # an Ethernet-only cluster: sockets are right
    Scenario("socket-ib-disabled-2node.txt", 2, MLX, "warn", "NET/Socket", "NCCL_IB_DISABLE"),
    Scenario("socket-no-device-2node.txt", 2, MLX[:1], "warn", "NET/Socket", "/dev/infiniband"),
    Scenario("ring-socket-old-2node.txt", 2, MLX[:1], "warn", "NET/Socket", "NCCL_SOCKET_IFNAME"),
    Scenario("p2p-1node.txt", 1, MLX[:1], "pass", "P2P"),
    Scenario("shm-1node.txt", 1, (), "pass", "SHM"),
]


def fake_sysfs(folder: Path, adapters: tuple) -> Path:
    """A /sys/class/infiniband of ``adapters``, each with port 1's link layer."""
    root = folder / "sys" / "class" / "infiniband"
    root.mkdir(parents=True, exist_ok=True)
    for name in adapters:
        (root / name / "ports" / "1").mkdir(parents=True)
        (root / name / "ports" / "1" / "link_layer").write_text("InfiniBand\n", encoding="utf-8")
    return root


def replay(scenario: Scenario, folder: Path, job_environ: dict | None = None) -> StageResult:
    """The stage's verdict on the scenario's box; ``job_environ`` adds to a two-node job's environment."""
    folder.mkdir(parents=True, exist_ok=True)
    shim = folder / "python"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -S "{WORKER}" "$@"\n', encoding="utf-8")
    shim.chmod(0o755)
    capture = str(CAPTURES / scenario.capture)
    observed: dict = {"executable": str(shim)}
    if hasattr(Probe, "rdma_devices"):  # the code as it was found had no such look
        from bdiag import transport

        root = str(fake_sysfs(folder, scenario.rdma))
        observed["rdma_devices"] = lambda: transport.rdma_devices(root)
    if scenario.nodes == 2:
        rank = {"RANK": "1", "WORLD_SIZE": "2", "LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "1", "GROUP_RANK": "1"}
        observed["environ"] = dict(rank, MASTER_ADDR="10.0.0.1", MASTER_PORT="29501", FAKE_NCCL_CAPTURE=capture, **(job_environ or {}))
        observed["device_count"] = 1
    else:
        observed["device_count"] = 2
    saved = os.environ.get("FAKE_NCCL_CAPTURE")
    os.environ["FAKE_NCCL_CAPTURE"] = capture  # the one-node check's workers inherit this process's environment
    try:
        result = StageResult(collectives.NAME, NAMES.index(collectives.NAME) + 1)
        collectives.run(make_checkup(gpu_probe(**observed)), result)
        return result
    finally:
        if saved is None:
            os.environ.pop("FAKE_NCCL_CAPTURE", None)
        else:
            os.environ["FAKE_NCCL_CAPTURE"] = saved


def verdict(scenario: Scenario, result: StageResult) -> tuple[bool, str]:
    said = f"{result.status}: {result.summary} | {' | '.join(result.messages)} | {result.hint or ''}"
    right = result.status == scenario.expect and scenario.transport in result.summary
    if scenario.cause:
        right = right and scenario.cause in " ".join([*result.messages, result.hint or ""])
    return right, said


def main() -> int:
    right = 0
    with tempfile.TemporaryDirectory(prefix="nccl-replay-") as folder:
        for number, scenario in enumerate(SCENARIOS):
            good, said = verdict(scenario, replay(scenario, Path(folder) / str(number)))
            right += good
            if not good:
                print(f"WRONG {scenario.id} (expected {scenario.expect} naming {scenario.transport}): {said[:300]}")
    print(f"right verdicts: {right} of {len(SCENARIOS)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
