"""Stands in for bdiag's collective and distributed workers where no GPU exists: prints the NCCL
INFO lines of a capture (FAKE_NCCL_CAPTURE) only when NCCL_DEBUG=INFO, as NCCL itself does, and
writes the answer of a healthy all_reduce to the output path, the worker's last argument.

usage (as the probe's interpreter): python fake_nccl_worker.py WORKER_SCRIPT ARGS... OUT.json
"""

import json
import os
import sys


def main(argv: list) -> int:
    out = argv[-1]
    if os.environ.get("NCCL_DEBUG") == "INFO":
        with open(os.environ["FAKE_NCCL_CAPTURE"], encoding="utf-8") as handle:
            sys.stderr.write(handle.read())
    local = os.path.basename(argv[0]) == "collective_worker.py"  # BACKEND DEVICE RANK WORLD PORT OUT
    rank = int(argv[3]) if local else int(os.environ.get("RANK", "0"))
    nodes = [{"rank": peer, "node": peer, "host": f"node-{peer}"} for peer in (0, 1)]
    answer = {"ok": True, "rank": rank, "value": 3.0, "expected": 3.0, "bus_bandwidth_gb_s": 20.0, "peers": nodes}
    with open(out + ".tmp", "w", encoding="utf-8") as handle:
        json.dump(answer, handle)
    os.replace(out + ".tmp", out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
