"""Fresh-process half of the checkpoint stage: load, restore into new objects, digest.

usage: python reload_checkpoint.py CHECKPOINT DEVICE OUT.json
       python reload_checkpoint.py --serve   (import torch now, read ["CHECKPOINT", "DEVICE", "OUT"] from stdin)
"""

import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main(checkpoint: str, device: str, out: str) -> int:
    import torch

    from bdiag import workloads

    start = time.perf_counter()
    with open(checkpoint, "rb") as handle:
        state = torch.load(handle, map_location=device, weights_only=True)
    read_seconds = time.perf_counter() - start
    raw = workloads.digests(state)
    objects = workloads.training_objects(device, seed=0)  # other initial weights: loading must overwrite them
    workloads.restore(objects, state)
    restored = workloads.digests(workloads.checkpoint_state(objects, state["progress"]))
    answer = {"read_seconds": read_seconds, "raw": raw, "restored": restored, "pid": os.getpid()}
    tmp = out + ".tmp"
    with open(tmp, "w", encoding="utf-8") as handle:
        json.dump(answer, handle)
    os.replace(tmp, out)
    return 0


def serve() -> int:
    import torch

    try:
        import torch._dynamo  # noqa: F401  (torch.optim pulls it in; seconds on a small CPU)
    except Exception:
        pass

    line = sys.stdin.readline()
    if not line.strip():
        return 0
    return main(*json.loads(line))


if __name__ == "__main__":
    sys.exit(serve() if sys.argv[1:] == ["--serve"] else main(*sys.argv[1:4]))
