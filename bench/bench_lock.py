"""Benchmark `bundler lock` on the CPU example (torch==2.13.0, cpu, Python 3.11).

Prints, measured side by side in one run:
- `bundler lock --dry-run` (a subprocess, as a user runs it, next to `bundler --version`
  and `python -c pass` for the interpreter's own start-up), and the plan in-process;
- a cold lock (empty cache), the warm re-lock with nothing changed, and a re-resolution
  with a warm cache (`--upgrade`), next to plain pip-compile on the same input.

PyTorch's cpu index is unreachable here, so BUNDLER_INDEX_MAP points it at a local
PEP 503 page linking the real wheel (/opt/wheels); the other packages come from PyPI.
Then the two resolvers side by side (pip-tools, the default, and `--resolver uv`) on the
same Targets, cold (empty cache) and warm (`--upgrade` with the cache filled): the CPU
example, a real CUDA 12.8 lock from PyPI (torch 2.9.1, `--torch-index pypi`) and an
aarch64 Target (GH200/GB200: torch 2.13.0, PyPI's cu130 aarch64 wheel) locked from this
x86-64 host; pip-tools reaches aarch64 only in an arm64 container (`--aarch64-image TAG`,
an emulated engine), so without one its cell says why. The cache size after each lock
shows what was fetched: metadata and hashes only, never a wheel.
Usage: python bench/bench_lock.py [--wheel PATH] [--repeat N] [--resolvers-only] [--aarch64-image TAG]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.fakeindex import real_torch_index  # noqa: E402

WHEEL = Path("/opt/wheels/torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl")
BUNDLE = """[project]
name = "Bench"
package = "bench"
entry = "python -m bench"

[target]
backend = "cpu"
accelerator = ""
torch = "2.13.0"
python = "3.11"
platform = "linux_x86_64"
base_image = "python:3.11-slim-bookworm"
base_digest = ""
"""


def timed(argv: list[str], env: dict, cwd: Path | None = None) -> tuple[float, subprocess.CompletedProcess]:
    started = time.perf_counter()
    completed = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if completed.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({completed.returncode}):\n{completed.stderr[-2000:]}")
    return elapsed, completed


def median_of(repeat: int, argv: list[str], env: dict, cwd: Path | None = None) -> float:
    return statistics.median(timed(argv, env, cwd)[0] for _ in range(repeat))


def folder_state(path: Path) -> tuple[int, int]:
    """(number of files, total bytes) under the cache: unchanged means nothing was fetched."""
    files = [p for p in path.rglob("*") if p.is_file()]
    return len(files), sum(p.stat().st_size for p in files)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wheel", type=Path, default=WHEEL)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--resolvers-only", action="store_true", help="only the pip-tools / uv comparison")
    parser.add_argument(
        "--aarch64-image", help="an arm64 image with Python 3.11 for pip-tools' aarch64 lock (emulated; bench/arm64_base.py makes one)"
    )
    args = parser.parse_args()
    if args.resolvers_only:
        resolver_figures(args)
        return
    work = Path(tempfile.mkdtemp(prefix="bench-lock-"))
    try:
        project = work / "project"
        project.mkdir()
        (project / "bundle.toml").write_text(BUNDLE)
        (project / "requirements.in").write_text("torch==2.13.0\n")
        torch_root = real_torch_index(work / "torchindex", args.wheel)
        cache = work / "cache"
        env = {**os.environ, "BUNDLER_CACHE_DIR": str(cache), "BUNDLER_INDEX_MAP": f"https://download.pytorch.org/whl={torch_root}"}
        bundler = [sys.executable, "-m", "bundler"]

        python_start = median_of(args.repeat, [sys.executable, "-c", "pass"], env)
        version = median_of(args.repeat, [*bundler, "--version"], env)
        dry_run = median_of(args.repeat, [*bundler, "lock", str(project), "--dry-run", "--json"], env)
        plan_code = (
            "import time; t=time.perf_counter(); from bundler.target.bundle import load_bundle; from bundler.lock.run import run_lock; "
            f"run_lock(load_bundle({str(project)!r}), dry_run=True); print(time.perf_counter()-t)"
        )
        plan_in_process = statistics.median(float(timed([sys.executable, "-c", plan_code], env)[1].stdout) for _ in range(args.repeat))

        cold, _ = timed([*bundler, "lock", str(project)], env)
        cache_after_cold = folder_state(cache)
        lock_text = (project / "requirements-rebuild.txt").read_text()
        warm = median_of(args.repeat, [*bundler, "lock", str(project)], env)
        _, warm_run = timed([*bundler, "lock", str(project)], env)
        assert (project / "requirements-rebuild.txt").read_text() == lock_text
        cache_after_warm = folder_state(cache)
        upgrade, _ = timed([*bundler, "lock", str(project), "--upgrade"], env)

        # plain pip-compile, same input and indexes, its own cold cache, host config isolated
        plain_dir = work / "plain"
        plain_dir.mkdir()
        (plain_dir / "requirements.in").write_text("torch==2.13.0+cpu\n")
        plain_env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
        plain_env |= {"PIP_CONFIG_FILE": os.devnull, "PIP_CACHE_DIR": str(work / "plain-cache" / "pip")}
        plain_argv = [
            sys.executable,
            "-m",
            "piptools",
            "compile",
            "--no-config",
            "--generate-hashes",
            "--allow-unsafe",
            "--strip-extras",
            "--index-url",
            f"{torch_root}/cpu",
            "--extra-index-url",
            "https://pypi.org/simple",
            "--cache-dir",
            str(work / "plain-cache" / "pip-tools"),
            "-o",
            "out.txt",
            "requirements.in",
        ]
        plain_cold, _ = timed(plain_argv, plain_env, plain_dir)
        plain_again, _ = timed(plain_argv, plain_env, plain_dir)

        print(
            f"CPU example: torch==2.13.0 (+cpu, cp311, {args.wheel.stat().st_size / 1e6:.0f} MB wheel), median of {args.repeat} where "
            "repeated"
        )
        print(f"  python -c pass                     {python_start:7.3f} s   (interpreter start-up on this host)")
        print(f"  bundler --version                  {version:7.3f} s")
        print(f"  bundler lock --dry-run --json      {dry_run:7.3f} s   (plan alone, in-process: {plan_in_process:.3f} s)")
        print(f"  bundler lock, cold cache           {cold:7.3f} s")
        print(f"  bundler lock, warm, nothing changed{warm:7.3f} s   = {100 * warm / cold:.1f}% of cold")
        print(f"  bundler lock --upgrade, warm cache {upgrade:7.3f} s   = {100 * upgrade / cold:.1f}% of cold (full re-resolution)")
        print(f"  plain pip-compile, cold            {plain_cold:7.3f} s")
        print(
            f"  plain pip-compile, run again       {plain_again:7.3f} s   = {100 * plain_again / plain_cold:.1f}% of its cold (re-hashes "
            "torch)"
        )
        print(
            f"  cache after cold lock {cache_after_cold[0]} files / {cache_after_cold[1] / 1e6:.1f} MB, after the warm runs "
            f"{cache_after_warm[0]} files / {cache_after_warm[1] / 1e6:.1f} MB (the warm run resolves nothing, so it fetches and hashes "
            "nothing)"
        )
        print(f"  warm run says: {warm_run.stderr.strip().splitlines()[0]}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    resolver_figures(args)


RESOLVER_TARGETS = [  # (name, requirements.in, lock flags)
    ("CPU example, torch 2.13.0+cpu", "torch==2.13.0\n", ["--cpu"]),
    ("CUDA 12.8 from PyPI, torch 2.9.1", "torch\ntorchvision\n", ["--cuda", "12.8", "--torch", "2.9.1", "--torch-index", "pypi"]),
    (
        "aarch64 CUDA 13.0 from PyPI, torch 2.13.0",
        "torch\ntorchvision\n",
        ["--cuda", "13.0", "--torch", "2.13.0", "--torch-index", "pypi", "--platform", "linux/aarch64"],
    ),
]


def resolver_figures(args) -> None:
    """Both resolvers' lock times, cold and warm, on the same Targets, one table."""
    work = Path(tempfile.mkdtemp(prefix="bench-resolvers-"))
    try:
        torch_root = real_torch_index(work / "torchindex", args.wheel)
        print("\nResolvers side by side (one cold lock each, warm = median of --upgrade with the cache filled):")
        print(f"  {'Target':<44}{'resolver':<11}{'cold':>9}{'warm':>9}  cache after cold  pins")
        for number, (name, requirements, flags) in enumerate(RESOLVER_TARGETS):
            pins = {}
            for resolver in ("pip-tools", "uv"):
                cells = _resolver_cell(work / f"{number}-{resolver}", torch_root, requirements, flags, resolver, args)
                if isinstance(cells, str):
                    print(f"  {name:<44}{resolver:<11}{'—':>9}{'—':>9}  {cells}")
                    continue
                cold, warm, cache, locked = cells
                pins[resolver] = locked
                same = "" if len(pins) < 2 else ("same pins as pip-tools" if pins["uv"] == pins["pip-tools"] else "PINS DIFFER")
                print(f"  {name:<44}{resolver:<11}{cold:8.2f}s{warm:8.2f}s  {cache / 1e6:8.1f} MB      {len(locked)} {same}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _resolver_cell(folder: Path, torch_root: str, requirements: str, flags: list[str], resolver: str, args):
    from bundler.lock.lockfile import parse_pins, split_lock

    project = folder / "project"
    project.mkdir(parents=True)
    bundle = BUNDLE
    if resolver == "pip-tools" and "linux/aarch64" in flags:
        if not args.aarch64_image:
            return "pip-tools resolves for the host only: an arm64 container is needed (--aarch64-image TAG on an emulated engine)"
        bundle = bundle.replace('base_image = "python:3.11-slim-bookworm"', f'base_image = "{args.aarch64_image}"')
    (project / "bundle.toml").write_text(bundle)
    (project / "requirements.in").write_text(requirements)
    cache = folder / "cache"
    env = {**os.environ, "BUNDLER_CACHE_DIR": str(cache), "BUNDLER_INDEX_MAP": f"https://download.pytorch.org/whl={torch_root}"}
    argv = [sys.executable, "-m", "bundler", "lock", str(project), *flags, "--resolver", resolver]
    cold, _ = timed(argv, env)
    cache_bytes = folder_state(cache)[1]
    warm = median_of(args.repeat, [*argv, "--upgrade"], env)
    lock = (project / "requirements-rebuild.txt").read_text()
    return cold, warm, cache_bytes, {p.name: p.version for p in parse_pins(split_lock(lock)[1])}


if __name__ == "__main__":
    main()
