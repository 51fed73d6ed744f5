"""One rank of the collectives stage: a 2-rank all_reduce in a fresh process.

usage: python collective_worker.py BACKEND DEVICE RANK WORLD PORT OUT.json
"""

import datetime
import json
import os
import sys
import time


def main(backend: str, device: str, rank_text: str, world_text: str, port: str, out: str) -> int:
    import torch
    import torch.distributed as dist

    rank, world = int(rank_text), int(world_text)
    if device == "cuda":
        torch.cuda.set_device(rank)
    target = torch.device("cuda", rank) if device == "cuda" else torch.device("cpu")
    dist.init_process_group(
        backend, init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world, timeout=datetime.timedelta(seconds=120)
    )
    try:
        figures = all_reduce(torch, dist, device, target, rank, world)
    finally:
        dist.destroy_process_group()
    answer = {
        "ok": figures["ok"],
        "rank": rank,
        "value": figures["value"],
        "expected": figures["expected"],
        "bus_bandwidth_gb_s": round(figures["bus_gb_s"], 2),
        "backend": backend,
    }
    write_answer(answer, out)
    return 0


def all_reduce(torch, dist, device: str, target, rank: int, world: int) -> dict:
    """In a live process group: an all_reduce whose sum is known, then the bus bandwidth of
    a 16 MiB (CPU) or 256 MiB (CUDA) one, warmed up, over 5 iterations."""
    small = torch.full((1024,), float(rank + 1), device=target)
    dist.all_reduce(small)
    expected = world * (world + 1) / 2
    correct = bool(torch.all(small == expected))
    numel = (64 << 20) // 4 if device == "cuda" else (4 << 20) // 4
    big = torch.ones(numel, device=target)
    dist.all_reduce(big)  # warm-up
    _sync(torch, device)
    start, iterations = time.perf_counter(), 5
    for _ in range(iterations):
        dist.all_reduce(big)
    _sync(torch, device)
    seconds = (time.perf_counter() - start) / iterations
    bus = numel * 4 * 2 * (world - 1) / world / seconds / 1e9
    return {"ok": correct, "value": float(small[0]), "expected": expected, "bus_gb_s": bus}


def _sync(torch, device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def write_answer(answer: dict, out: str) -> None:
    """``answer`` as JSON at ``out``, atomically (the stage reads it after the process ends)."""
    tmp = out + ".tmp"
    with open(tmp, "w", encoding="utf-8") as handle:
        json.dump(answer, handle)
    os.replace(tmp, out)


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:7]))
