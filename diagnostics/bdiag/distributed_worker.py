"""One rank's part of the job-wide all-reduce (the collectives stage under torchrun).

usage: python distributed_worker.py BACKEND DEVICE JOIN_TIMEOUT_S OUT.json

Reads torchrun's environment (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT,
GROUP_RANK, TORCHELASTIC_*). Each rank first announces itself in the job's store and
waits at most JOIN_TIMEOUT_S for the others, so that the answer can name the ranks that
never came; then one all_reduce whose sum is known, and its bus bandwidth. The answer is
always written (ok, or what went wrong), never a traceback alone.
"""

import datetime
import json
import os
import socket
import sys

from collective_worker import all_reduce, write_answer  # type: ignore[import-not-found]  # run as a script: its folder comes first on sys.path


def main(backend: str, device: str, timeout: str, out: str) -> int:
    env = os.environ
    rank, world = int(env["RANK"]), int(env["WORLD_SIZE"])
    local_world = max(1, int(env.get("LOCAL_WORLD_SIZE") or 1))
    node = int(env.get("GROUP_RANK") or rank // local_world)
    answer = {"ok": False, "rank": rank, "node": node, "host": socket.gethostname(), "world": world, "backend": backend}
    try:
        answer.update(_take_part(backend, device, datetime.timedelta(seconds=float(timeout)), answer))
    except Exception as error:
        text = str(error).strip()
        answer["error"] = f"{type(error).__name__}: {text.splitlines()[0][:400] if text else 'no message'}"
    write_answer(answer, out)
    return 0


def _take_part(backend: str, device: str, limit: datetime.timedelta, me: dict) -> dict:
    import torch
    import torch.distributed as dist

    env = os.environ
    rank, world, local_rank = me["rank"], me["world"], int(env["LOCAL_RANK"])
    if device == "cuda":
        torch.cuda.set_device(local_rank)
    target = torch.device("cuda", local_rank) if device == "cuda" else torch.device("cpu")
    address = f"{env['MASTER_ADDR']}:{env['MASTER_PORT']}"
    try:
        store = _store(dist, env, rank, limit)
    except Exception as error:
        return {"unreachable": address, "error": f"{type(error).__name__}: {str(error).strip()[:300]}"}
    # keys of this launch only: a restarted or later run starts from an empty namespace
    store = dist.PrefixStore(f"bdiag/{env.get('TORCHELASTIC_RUN_ID', 'none')}/{env.get('TORCHELASTIC_RESTART_COUNT', '0')}", store)
    store.set(f"joined/{rank}", json.dumps({"rank": rank, "node": me["node"], "host": me["host"]}))
    keys = [f"joined/{other}" for other in range(world)]
    try:
        store.wait(keys, limit)
    except Exception as error:
        try:
            return {"missing": [other for other in range(world) if not store.check([f"joined/{other}"])]}
        except Exception:  # the store itself went away: the agent holding it stopped
            return {"lost": address, "error": f"{type(error).__name__}: {str(error).strip()[:300]}"}
    peers = [json.loads(store.get(key)) for key in keys]
    dist.init_process_group(backend, store=store, rank=rank, world_size=world, timeout=limit)
    try:
        figures = all_reduce(torch, dist, device, target, rank, world)
    finally:
        dist.destroy_process_group()
    return {
        "ok": figures["ok"],
        "value": figures["value"],
        "expected": figures["expected"],
        "bus_bandwidth_gb_s": round(figures["bus_gb_s"], 3),
        "peers": peers,
    }


def _store(dist, env, rank: int, limit: datetime.timedelta):
    """torchrun's store (its agent hosts it), else one that rank 0 hosts at MASTER_ADDR:MASTER_PORT."""
    host, port = env["MASTER_ADDR"], int(env["MASTER_PORT"])
    if env.get("TORCHELASTIC_USE_AGENT_STORE") == "True":
        return dist.TCPStore(host, port, is_master=False, timeout=limit)
    return dist.TCPStore(host, port, is_master=rank == 0, timeout=limit, wait_for_workers=False)


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:5]))
