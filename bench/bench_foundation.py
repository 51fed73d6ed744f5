"""Figures for the foundation: CLI start-up, `bundler new`, the example pilot on CPU.

python bench/bench_foundation.py
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import median, row, run, timed

HEAVY = ("docker", "cookiecutter", "piptools", "torch")


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="bench-foundation-"))
    try:
        help_samples = timed(lambda: run([sys.executable, "-m", "bundler", "--help"]), repeat=11)
        bare_python = timed(lambda: run([sys.executable, "-c", "pass"]), repeat=11)
        loaded = run(
            [sys.executable, "-c", f"import sys, bundler.cli; print(' '.join(m for m in {HEAVY!r} if m in sys.modules))"]
        ).stdout.strip()

        counter = iter(range(1000))
        new_samples = timed(lambda: run([sys.executable, "-m", "bundler", "new", str(work / f"p{next(counter)}"), "--no-input"]), repeat=7)

        project = work / "p0"
        env = {**os.environ, "PYTHONPATH": str(project / "src")}
        ids = iter(range(1000))
        pilot_samples = timed(
            lambda: run(
                [sys.executable, "-m", "p0.pilot", "--config", "config/pilot.json", "--run-id", f"b{next(ids)}"], cwd=project, env=env
            ),
            repeat=5,
        )
        torch_import = timed(lambda: run([sys.executable, "-c", "import torch"]), repeat=5)

        print(row("bundler --help", help_samples, "(target <= 0.3 s)"))
        print(row("python -c pass (interpreter floor)", bare_python))
        print(f"{'heavy modules loaded by import bundler.cli':<44} {loaded or 'none'}")
        print(row("bundler new --no-input", new_samples, "(target <= 1 s)"))
        print(row("pilot, 12 documents, CPU, torch import incl.", pilot_samples, "(target <= 15 s)"))
        print(row("python -c 'import torch' alone", torch_import))
        print(f"{'ratio pilot / torch import':<44} {median(pilot_samples) / median(torch_import):8.2f} x")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
