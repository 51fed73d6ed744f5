"""Figures for `bundler run`: what recording costs beside running the command directly.

    python bench/bench_run.py [--files 2000] [--kib 64] [--repeats 3]

Makes a small git repository with a bundle.toml whose entry writes FILES files of KIB KiB
into its output folder and prints a line per file, then measures side by side, median of
REPEATS: the entry run directly (with BUNDLE_RUN_DIR set by hand), `bundler run` of the
same entry, and `bundler runs verify` of that run. Prints figures; never passes or fails
on time.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ENTRY = """import os, pathlib, sys
out = pathlib.Path(os.environ["BUNDLE_RUN_DIR"])
block = os.urandom(int(sys.argv[2]) * 1024)
for index in range(int(sys.argv[1])):
    (out / f"part-{index:05d}.bin").write_bytes(block)
    print(f"wrote part {index}")
"""


def timed(argv: list[str], cwd: Path, env: dict | None = None) -> float:
    started = time.perf_counter()
    completed = subprocess.run(argv, cwd=cwd, env={**os.environ, **(env or {})}, capture_output=True)
    elapsed = time.perf_counter() - started
    if completed.returncode != 0:
        raise SystemExit(f"{argv} failed: {completed.stderr.decode()[-2000:]}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--kib", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-run-") as scratch:
        project = Path(scratch) / "repo"
        project.mkdir()
        entry = f"{sys.executable} train.py {args.files} {args.kib}"
        (project / "bundle.toml").write_text(
            f'[project]\nname = "bench"\npackage = "bench"\nentry = "{entry}"\n\n'
            '[target]\nbackend = "cpu"\ntorch = "2.13.0"\npython = "3.11"\n'
        )
        (project / "train.py").write_text(ENTRY)
        (project / ".gitignore").write_text("runs/\ndirect/\n")
        for git in (["init", "-q"], ["add", "-A"], ["-c", "user.email=b@b", "-c", "user.name=b", "commit", "-qm", "bench"]):
            subprocess.run(["git", *git], cwd=project, check=True)
        direct, recorded, verified = [], [], []
        for repeat in range(args.repeats):
            out = project / "direct" / str(repeat)
            out.mkdir(parents=True)
            direct.append(timed(entry.split(), project, {"BUNDLE_RUN_DIR": str(out)}))
            recorded.append(timed([sys.executable, "-m", "bundler", "run", "--run-id", f"r{repeat}"], project))
            verified.append(timed([sys.executable, "-m", "bundler", "runs", "verify", f"runs/r{repeat}"], project))
        megabytes = args.files * args.kib / 1024
        print(f"entry writing {args.files} files, {megabytes:.0f} MiB, one stdout line each; median of {args.repeats}")
        print(f"  entry run directly      {statistics.median(direct):7.2f} s")
        print(f"  bundler run             {statistics.median(recorded):7.2f} s")
        print(f"  bundler runs verify     {statistics.median(verified):7.2f} s")
        print(f"  recording overhead      {statistics.median(recorded) - statistics.median(direct):7.2f} s")


if __name__ == "__main__":
    main()
