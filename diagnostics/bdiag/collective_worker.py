"""One rank of the collectives stage: a 2-rank all_reduce in a fresh process.

usage: python collective_worker.py BACKEND DEVICE RANK WORLD PORT OUT.json
"""

import datetime
import json
import os
import sys
import time


def main(backend: str, device: str, rank: str, world: str, port: str, out: str) -> int:
    import torch
    import torch.distributed as dist

    rank, world = int(rank), int(world)
    if device == "cuda":
        torch.cuda.set_device(rank)
    target = torch.device("cuda", rank) if device == "cuda" else torch.device("cpu")
    dist.init_process_group(
        backend, init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world, timeout=datetime.timedelta(seconds=120)
    )
    try:
        small = torch.full((1024,), float(rank + 1), device=target)
        dist.all_reduce(small)
        expected = world * (world + 1) / 2
        correct = bool(torch.all(small == expected))
        numel = (64 << 20) // 4 if device == "cuda" else (4 << 20) // 4
        big = torch.ones(numel, device=target)
        dist.all_reduce(big)  # warm-up
        if device == "cuda":
            torch.cuda.synchronize()
        start, iterations = time.perf_counter(), 5
        for _ in range(iterations):
            dist.all_reduce(big)
        if device == "cuda":
            torch.cuda.synchronize()
        seconds = (time.perf_counter() - start) / iterations
        bus_gb_s = numel * 4 * 2 * (world - 1) / world / seconds / 1e9
        answer = {
            "ok": correct,
            "rank": rank,
            "value": float(small[0]),
            "expected": expected,
            "bus_bandwidth_gb_s": round(bus_gb_s, 2),
            "backend": backend,
        }
    finally:
        dist.destroy_process_group()
    tmp = out + ".tmp"
    with open(tmp, "w", encoding="utf-8") as handle:
        json.dump(answer, handle)
    os.replace(tmp, out)
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:7]))
