"""Figures for `bundler build`, measured side by side in one run on the same project and base.

The example project (real CPU torch 2.13.0, locked against a local copy of PyTorch's
CPU index + PyPI) is built by bundler and by a naive Dockerfile (`COPY . /app` then
`pip install -r requirements`, wheels from the same wheelhouse since builds are offline):
cold build, code-only rebuild, image size against base + site-packages, context size
against wheelhouse + project sources. Prints figures and ratios; never pass/fail.

    python bench/bench_build.py [--base IMAGE]   (default: the tests' bundler-test/bookworm-python3.11:1)
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

WHEEL = Path("/opt/wheels/torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl")
NAIVE = """\
FROM {base}
COPY . /app
WORKDIR /app
RUN python3.11 -m venv /opt/venv && /opt/venv/bin/pip install --no-index --find-links /app/wheels --no-cache-dir -r requirements.txt
ENV PYTHONPATH=/app/src
"""


def timed(function, *args, **kwargs):
    started = time.monotonic()
    value = function(*args, **kwargs)
    return value, time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default="bundler-test/bookworm-python3.11:1")
    args = parser.parse_args()
    from bundler import engine as engines
    from bundler.image import build as builder
    from bundler.image import wheelhouse
    from bundler.lock.lockfile import requirements_body, split_lock
    from bundler.lock.run import run_lock
    from bundler.target.bundle import load_bundle
    from tests.conftest import scaffold_project
    from tests.fakeindex import real_torch_index

    work = Path(tempfile.mkdtemp(prefix="bench-build-"))
    os.environ.setdefault("BUNDLER_CACHE_DIR", str(work / "cache"))
    os.environ["BUNDLER_INDEX_MAP"] = "https://download.pytorch.org/whl=" + real_torch_index(work / "torchindex", WHEEL)
    client = engines.client()
    project = scaffold_project(work / "example")
    _, lock_s = timed(run_lock, load_bundle(project), cpu=True)
    bundle = load_bundle(project)
    wheels, download_s = timed(wheelhouse.gather, bundle.lock_path, bundle.target)
    engine_seconds = []
    original = builder.run_engine_build

    def engine_step(*a, **k):
        value, seconds = timed(original, *a, **k)
        engine_seconds.append(seconds)
        return value

    builder.run_engine_build = engine_step
    cold, cold_s = timed(builder.run_build, bundle, base=args.base, tag="bench/bundler:cold", no_cache=True)  # cold: no layer cache
    cold_engine = sum(engine_seconds)
    model = next((project / "src").rglob("model.py"))
    model.write_text(model.read_text() + "\n# code-only change 1\n")
    engine_seconds.clear()
    warm, warm_s = timed(builder.run_build, load_bundle(project), base=args.base, tag="bench/bundler:warm")
    warm_engine = sum(engine_seconds)

    # the naive Dockerfile, same project, same base, same wheels
    naive_dir = work / "naive"
    shutil.copytree(project, naive_dir, ignore=shutil.ignore_patterns("runs"))
    (naive_dir / "wheels").mkdir()
    for wheel in wheels:
        shutil.copy(wheel.path, naive_dir / "wheels" / wheel.filename)
    (naive_dir / "requirements.txt").write_text(requirements_body(split_lock(bundle.lock_path.read_text())[1]))
    (naive_dir / "Dockerfile").write_text(NAIVE.format(base=args.base))
    (naive_cold, _), naive_cold_s = timed(
        client.images.build, path=str(naive_dir), tag="bench/naive:1", rm=True, network_mode="none", nocache=True
    )
    naive_model = next((naive_dir / "src").rglob("model.py"))
    naive_model.write_text(naive_model.read_text() + "\n# code-only change 1\n")
    (naive_warm, _), naive_warm_s = timed(client.images.build, path=str(naive_dir), tag="bench/naive:2", rm=True, network_mode="none")

    base_size = client.images.get(args.base).attrs["Size"]
    site = client.containers.run(warm.tag, ["du", "-sb", "/opt/venv/lib/python3.11/site-packages"], remove=True, network_mode="none")
    site_bytes = int(site.split()[0])
    ours, naive_size = warm.size.total, naive_warm.attrs["Size"]
    project_bytes = warm.project_bytes
    naive_context = sum(p.stat().st_size for p in naive_dir.rglob("*") if p.is_file())
    mb = 1e6
    print(
        f"project: example (torch 2.13.0+cpu), base {args.base} ({base_size / mb:.1f} MB); lock {lock_s:.1f} s, wheel download "
        f"{download_s:.1f} s"
    )
    print(f"cold build          bundler {cold_s:7.1f} s (engine {cold_engine:.1f} s)   naive {naive_cold_s:7.1f} s")
    print(
        f"code-only rebuild   bundler {warm_s:7.1f} s (engine {warm_engine:.1f} s, the rest is the smoke test)   naive "
        f"{naive_warm_s:7.1f} s"
    )
    print(f"  rebuild / cold (bundler)              {warm_s / cold_s:6.1%}   (target <= 10%)")
    print(
        f"  naive rebuild / bundler rebuild       {naive_warm_s / warm_s:6.1f}x  (engine step alone: {naive_warm_s / warm_engine:.1f}x; "
        "target >= 10x)"
    )
    print(
        f"image size          bundler {ours / mb:7.1f} MB   naive {naive_size / mb:7.1f} MB   base + site-packages "
        f"{(base_size + site_bytes) / mb:.1f} MB"
    )
    print(f"  bundler / (base + site-packages)      {ours / (base_size + site_bytes):6.3f}   (target <= 1.05)")
    print(f"  bundler / naive                       {ours / naive_size:6.3f}   (target <= 1)")
    print(
        f"context sent        bundler cold {cold.context_bytes / mb:.2f} MB (dependency image "
        f"{cold.deps.get('deps_context_bytes', 0) / mb:.2f} MB + project "
        f"{(cold.context_bytes - cold.deps.get('deps_context_bytes', 0)) / mb:.2f} MB), rebuild {warm.context_bytes / mb:.2f} MB; naive "
        f"{naive_context / mb:.2f} MB"
    )
    print(
        f"  wheelhouse {cold.wheelhouse_bytes / mb:.2f} MB + project sources {project_bytes / mb:.2f} MB = "
        f"{(cold.wheelhouse_bytes + project_bytes) / mb:.2f} MB;"
        f" cold context / that = {cold.context_bytes / (cold.wheelhouse_bytes + project_bytes):.4f} (tar headers are the difference)"
    )
    for tag in ("bench/bundler:cold", "bench/bundler:warm", "bench/naive:1", "bench/naive:2"):
        client.images.remove(tag, noprune=False, force=True)
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
