"""One torchrun worker of the cross-node collectives tests: stage 10 alone, as run.py runs it.

usage: torchrun … tests/collectives_rank.py OUT_FOLDER [--hang]

Writes OUT_FOLDER/rank<RANK>.json (the stage's verdict) and exits 20 when the stage failed,
as the diagnostics would. ``--hang`` plays a node whose diagnostics hang before stage 10
(a stuck driver): it never reaches the all_reduce, and the test kills it.
"""

import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "diagnostics"))

from bdiag.checkup import Checkup
from bdiag.probe import Probe
from bdiag.result import StageResult
from bdiag.stages import collectives

COLLECTIVES_FAILED = 20
HANG_S = 600


def main(folder: str, *flags: str) -> int:
    if "--hang" in flags:
        time.sleep(HANG_S)
    import torch

    checkup = Checkup(probe=Probe(), backend="cpu", backend_source="test", bundle=None, results_dir=None)
    checkup.torch = torch
    result = StageResult(collectives.NAME, 10)
    start = time.perf_counter()
    collectives.run(checkup, result)
    result.seconds = time.perf_counter() - start
    Path(folder, f"rank{os.environ['RANK']}.json").write_text(json.dumps(result.as_dict()))
    return COLLECTIVES_FAILED if result.status == "fail" else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
