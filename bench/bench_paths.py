"""Scan throughput of `bundler paths` against `grep -rE` with an equivalent pattern.

Generates (once, cached) a tree of mixed text under /tmp — Python, JSON, YAML, shell,
Markdown, notebooks — with a few home paths sprinkled in, then times, side by side in
this run, a full `bundler.paths.scan` and `grep -rEn PATTERN TREE`, both on a warm
page cache. Prints MB/s of both and the ratio (the goal: scan >= 1/3 of grep).
Also times `bundler check` on a generated example project when `bundler new` works.

    python bench/bench_paths.py [--files 20000] [--megabytes 500] [--tree /tmp/bundler-bench-paths]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bundler import paths

GREP_PATTERN = (
    r"/home/[A-Za-z0-9_]|/Users/[A-Za-z0-9_]|/root(/|[^A-Za-z0-9_.-]|$)|[A-Za-z]:(\\\\|\\|/)[Uu][Ss][Ee][Rr][Ss]"
    r"|/mnt/[A-Za-z]/[Uu]sers/|/tmp(/|$)|/var/tmp|/var/folders|expanduser\(|Path\.home\(\)"
    r"|~/|\$HOME|\$\{HOME\}|%USERPROFILE%"
)

WORDS = [
    "model",
    "data",
    "train",
    "loss",
    "batch",
    "epoch",
    "tensor",
    "config",
    "value",
    "result",
    "layer",
    "weight",
    "bias",
    "optimizer",
    "scheduler",
    "device",
    "cuda",
    "float",
    "token",
    "label",
    "sample",
    "input",
    "output",
    "metric",
    "score",
    "document",
    "invoice",
    "contract",
    "letter",
    "report",
    "summary",
    "feature",
    "vector",
    "shape",
    "index",
    "cache",
]
HITS = (
    'DATA = "/home/alice/data/train.csv"\n',
    'ckpt = os.path.expanduser("~/checkpoints/run1")\n',
    '"model_dir": "C:\\\\Users\\\\bob\\\\models",\n',
    "out_dir: /tmp/experiment/out\n",
)


def _line(rng: random.Random, kind: str) -> str:
    words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 12)))
    if kind == "py":
        return f"    {rng.choice(WORDS)}_{rng.randint(0, 99)} = compute({words.replace(' ', ', ')!r})  # {words}\n"
    if kind == "json":
        return f'  "{rng.choice(WORDS)}_{rng.randint(0, 999)}": "{words}",\n'
    if kind == "yaml":
        return f"{rng.choice(WORDS)}_{rng.randint(0, 999)}: {words} /usr/share/{rng.choice(WORDS)}\n"
    if kind == "sh":
        return f'echo "{words}" >> "$LOG_DIR/{rng.choice(WORDS)}.log"\n'
    if rng.random() < 0.03:  # decoys: URLs holding /home/, which are not paths
        return f"The {words} of https://example.org/home/{rng.choice(WORDS)} is documented.\n"
    return f"The {words} is documented in section {rng.randint(1, 40)}.\n"


def generate_tree(root: Path, files: int, megabytes: int) -> None:
    """Write ``files`` files totalling about ``megabytes`` MB; ~2% of them hold a hit."""
    rng = random.Random(20261130)
    kinds = {"py": ".py", "json": ".json", "yaml": ".yaml", "sh": ".sh", "md": ".md"}
    blocks = {}
    per_file = megabytes * 1024 * 1024 // files
    for kind in kinds:
        text, lines = [], 0
        while lines < per_file * 2:
            line = _line(rng, kind)
            text.append(line)
            lines += len(line)
        blocks[kind] = "".join(text)
    staging = Path(tempfile.mkdtemp(prefix=root.name + ".", dir=root.parent))
    for number in range(files):
        kind = list(kinds)[number % len(kinds)]
        folder = staging / f"pkg{number % 50:02d}" / f"mod{number % 400:03d}"
        folder.mkdir(parents=True, exist_ok=True)
        offset = rng.randint(0, per_file)
        body = blocks[kind][offset : offset + per_file]
        if number % 50 == 0:
            body = HITS[number % len(HITS)] + body
        (folder / f"file{number:05d}{kinds[kind]}").write_text(f"# file {number}\n{body}\n", encoding="utf-8")
    (staging / ".complete").write_text(json.dumps({"files": files, "megabytes": megabytes}))
    if root.exists():
        shutil.rmtree(root)
    staging.rename(root)


def tree_size(root: Path) -> int:
    total = 0
    for folder, _, names in os.walk(root):
        for name in names:
            total += os.path.getsize(os.path.join(folder, name))
    return total


def best_of(runs: int, action) -> float:
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        action()
        best = min(best, time.perf_counter() - start)
    return best


def bench_scan(root: Path, runs: int) -> None:
    size = tree_size(root)
    megabytes = size / 1e6
    grep = ["grep", "-rEn", GREP_PATTERN, str(root)]
    subprocess.run(grep, stdout=subprocess.DEVNULL, check=False)  # warm the page cache
    grep_hits = subprocess.run(grep, capture_output=True, text=True, check=False).stdout.count("\n")
    result = paths.scan(root)
    grep_time = best_of(runs, lambda: subprocess.run(grep, stdout=subprocess.DEVNULL, check=False))
    scan_time = best_of(runs, lambda: paths.scan(root))
    print(f"tree: {root} ({sum(len(n) for _, _, n in os.walk(root))} files, {megabytes:.0f} MB)")
    print(f"grep -rEn : {grep_time:6.2f} s  {megabytes / grep_time:8.1f} MB/s  ({grep_hits} matching lines)")
    print(
        f"paths.scan: {scan_time:6.2f} s  {megabytes / scan_time:8.1f} MB/s  ({len(result.findings)} findings, {len(result.skipped)} "
        "skipped)"
    )
    print(f"ratio scan/grep throughput: {grep_time / scan_time:.2f} (goal >= 0.33)")


def bench_check(runs: int) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        project = Path(scratch) / "example"
        made = subprocess.run(
            [sys.executable, "-m", "bundler", "new", str(project), "--no-input"], capture_output=True, text=True, check=False
        )
        if made.returncode != 0:
            print(f"bundler check: skipped, `bundler new` failed: {made.stderr.strip()[:200]}")
            return
        command = [sys.executable, "-m", "bundler", "check", str(project)]
        elapsed = best_of(runs, lambda: subprocess.run(command, capture_output=True, check=False))
        code = subprocess.run(command, capture_output=True, check=False).returncode
        print(f"bundler check on the example project: {elapsed:.2f} s (exit {code}; goal <= 2 s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=20000)
    parser.add_argument("--megabytes", type=int, default=500)
    parser.add_argument("--tree", type=Path, default=Path(tempfile.gettempdir()) / "bundler-bench-paths")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    marker = args.tree / ".complete"
    wanted = {"files": args.files, "megabytes": args.megabytes}
    if not marker.exists() or json.loads(marker.read_text()) != wanted:
        start = time.perf_counter()
        generate_tree(args.tree, args.files, args.megabytes)
        print(f"generated {args.tree} in {time.perf_counter() - start:.1f} s")
    bench_scan(args.tree, args.runs)
    bench_check(args.runs)


if __name__ == "__main__":
    main()
