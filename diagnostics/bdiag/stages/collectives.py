"""Stage 10: a 2-rank all_reduce in fresh processes (NCCL/RCCL on GPUs, gloo on CPU), and the
transport NCCL chose (bdiag/transport.py: NET/IB, NET/Socket, P2P, SHM)."""

from __future__ import annotations

import shutil
import tempfile

from bdiag import distributed, transport
from bdiag.stages import card, peers

NAME = "collectives"
NEEDS_TORCH = True
WORLD = 2


def run(checkup, result) -> None:
    # Under torchrun: the job's all_reduce across processes and nodes, then this node's check.
    launch = distributed.launch_from(checkup.probe.environ())
    if launch is not None:
        distributed.run(checkup, result, launch, local=run_local)
        return
    run_local(checkup, result)


def run_local(checkup, result) -> None:
    """The check of this machine alone: its GPUs (or gloo on the CPU) in fresh processes."""
    probe, torch = checkup.probe, checkup.torch
    if checkup.gpu:
        count = probe.device_count(torch) if probe.cuda_available(torch) else 0
        result.values["devices"] = count
        if count < WORLD:
            result.skip(f"{count} device visible: collectives need at least {WORLD}")
            return
        peers.check_links(checkup, result, count)
        backend, device = "nccl", "cuda"  # torch's "nccl" is RCCL on ROCm builds
    else:
        if probe.environ().get("BUNDLE_DIAG_GLOO") != "1":
            result.skip("backend cpu: one device; set BUNDLE_DIAG_GLOO=1 for a 2-rank gloo all_reduce on the CPU")
            return
        backend, device = "gloo", "cpu"
    if not torch.distributed.is_available():
        result.fail("this torch build has no torch.distributed", "Install a torch build with distributed support.")
        return
    folder = tempfile.mkdtemp(prefix="bundle-collectives-")
    try:
        answers = probe.run_collective(backend, device, WORLD, folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    logs = [answer.pop("log", "") for answer in answers]
    result.values.update(backend=backend, world=WORLD, ranks=answers)
    broken = [answer for answer in answers if not answer.get("ok")]
    exclusive = card.exclusive_cards(checkup)
    if broken and exclusive:
        result.fail(*card.exclusive_message(exclusive, f"the {WORLD}-rank {backend} all_reduce runs in fresh processes, refused"))
        return
    if broken:
        detail = (
            broken[0].get("error") or f"rank {broken[0].get('rank')} got {broken[0].get('value')}, expected {broken[0].get('expected')}"
        )
        result.fail(
            f"a {WORLD}-rank {backend} all_reduce failed: {detail}",
            "Start the container with --ipc=host (or a large --shm-size); rerun with NCCL_DEBUG=INFO to see the transport that fails.",
        )
        return
    bandwidth = min(answer.get("bus_bandwidth_gb_s", 0) for answer in answers)
    result.values["bus_bandwidth_gb_s"] = bandwidth
    result.summary = f"{backend} all_reduce × {WORLD} ok, bus {bandwidth:.1f} GB/s"
    if backend == "nccl":
        transport.judge(result, logs, probe.rdma_devices(), probe.environ())
    peers.judge_bus_bandwidth(checkup, result, bandwidth, WORLD)
