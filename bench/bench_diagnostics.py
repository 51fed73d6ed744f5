"""Wall time of a full CPU diagnostics run (torch import included, JSON and HTML reports
written) next to collect_env.

    python bench/bench_diagnostics.py [--repeats 5] [--compare OTHER/run.py]

Both commands run in fresh processes, alternately, on the same machine; medians printed
with their ratio. Stage durations come from the last run's JSON report; the HTML report is
rendered again in this process to time it alone. --compare times another copy of the
folder (e.g. `git archive <rev> diagnostics | tar -x -C /tmp/base`) in the same rounds, so
that a change's cost reads as a ratio taken under the same load.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RUN_PY = Path(__file__).resolve().parents[1] / "diagnostics" / "run.py"


def timed(command: list[str], env: dict | None = None, cpu: list | None = None) -> tuple[float, int]:
    """Wall seconds and exit code; the CPU seconds of the process and its children go to ``cpu``
    (a figure the other people on a shared machine do not inflate)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={**os.environ, **(env or {})})
    seconds = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if cpu is not None:
        cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return seconds, done.returncode


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--compare", metavar="RUN_PY", help="another diagnostics/run.py to time in the same rounds")
    args = parser.parse_args()
    diag_times, env_times, other_times, codes = [], [], [], set()
    diag_cpu, other_cpu = [], []
    with tempfile.TemporaryDirectory() as work:
        report, page = Path(work) / "report.json", Path(work) / "report.html"
        command = [sys.executable, str(RUN_PY), "--backend", "cpu", "--json", str(report), "--report", str(page), "--results", work]
        for _ in range(args.repeats):
            seconds, code = timed(command, cpu=diag_cpu)
            diag_times.append(seconds)
            codes.add(code)
            env_times.append(timed([sys.executable, "-m", "torch.utils.collect_env"])[0])
            if args.compare:
                other_times.append(timed([sys.executable, args.compare, "--backend", "cpu", "--results", work], cpu=other_cpu)[0])
        document = json.loads(report.read_text())
        stages, page_bytes = document["stages"], page.stat().st_size
        render_seconds = render_time(document)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"machine: {os.cpu_count()} CPUs, load average {load:.2f}, Python {sys.version.split()[0]}")
    print(
        f"diagnostics/run.py --backend cpu : median {statistics.median(diag_times):6.2f} s  (runs: "
        f"{', '.join(f'{t:.2f}' for t in diag_times)}; exit codes {sorted(codes)}); CPU {statistics.median(diag_cpu):.2f} s"
    )
    print(
        f"python -m torch.utils.collect_env: median {statistics.median(env_times):6.2f} s  (runs: "
        f"{', '.join(f'{t:.2f}' for t in env_times)})"
    )
    print(f"ratio diagnostics / collect_env  : {statistics.median(diag_times) / statistics.median(env_times):.2f}")
    if other_times:
        print(
            f"{args.compare}: median {statistics.median(other_times):6.2f} s  (runs: {', '.join(f'{t:.2f}' for t in other_times)}); "
            f"CPU {statistics.median(other_cpu):.2f} s; ratio this / that: wall "
            f"{statistics.median(diag_times) / statistics.median(other_times):.2f}, "
            f"CPU {statistics.median(diag_cpu) / statistics.median(other_cpu):.2f}"
        )
    print("stage seconds (last run): " + ", ".join(f"{s['name']} {s['seconds']:.2f} ({s['status']})" for s in stages))
    print(f"HTML report: {page_bytes / 1024:.1f} KiB, rendered in {render_seconds * 1000:.2f} ms")


def render_time(document: dict, repeats: int = 50) -> float:
    sys.path.insert(0, str(RUN_PY.parent))
    from bdiag.html import render

    start = time.perf_counter()
    for _ in range(repeats):
        render(document)
    return (time.perf_counter() - start) / repeats


if __name__ == "__main__":
    main()
