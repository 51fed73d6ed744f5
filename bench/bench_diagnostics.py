"""Wall time of a full CPU diagnostics run (torch import included) next to collect_env.

    python bench/bench_diagnostics.py [--repeats 5]

Both commands run in fresh processes, alternately, on the same machine; medians printed
with their ratio. Stage durations come from the last run's JSON report.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RUN_PY = Path(__file__).resolve().parents[1] / "diagnostics" / "run.py"


def timed(command: list[str], env: dict | None = None) -> tuple[float, int]:
    start = time.perf_counter()
    done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={**os.environ, **(env or {})})
    return time.perf_counter() - start, done.returncode


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    diag_times, env_times, codes = [], [], set()
    with tempfile.TemporaryDirectory() as work:
        report = Path(work) / "report.json"
        for _ in range(args.repeats):
            seconds, code = timed([sys.executable, str(RUN_PY), "--backend", "cpu", "--json", str(report), "--results", work])
            diag_times.append(seconds)
            codes.add(code)
            env_times.append(timed([sys.executable, "-m", "torch.utils.collect_env"])[0])
        stages = json.loads(report.read_text())["stages"]
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"machine: {os.cpu_count()} CPUs, load average {load:.2f}, Python {sys.version.split()[0]}")
    print(
        f"diagnostics/run.py --backend cpu : median {statistics.median(diag_times):6.2f} s  (runs: "
        f"{', '.join(f'{t:.2f}' for t in diag_times)}; exit codes {sorted(codes)})"
    )
    print(
        f"python -m torch.utils.collect_env: median {statistics.median(env_times):6.2f} s  (runs: "
        f"{', '.join(f'{t:.2f}' for t in env_times)})"
    )
    print(f"ratio diagnostics / collect_env  : {statistics.median(diag_times) / statistics.median(env_times):.2f}")
    print("stage seconds (last run): " + ", ".join(f"{s['name']} {s['seconds']:.2f} ({s['status']})" for s in stages))


if __name__ == "__main__":
    main()
