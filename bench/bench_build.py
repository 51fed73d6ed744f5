"""Figures for `bundler build`, measured side by side in one run on the same wheels and base.

For each example — ``cpu`` (real torch 2.13.0+cpu from a local copy of PyTorch's CPU
index) and ``cuda`` (PyPI's own CUDA build of torch 2.9.1, cu128, locked with
``--torch-index pypi``: ~4 GB of wheels) — bundler and a naive Dockerfile (`COPY . /app`
with the wheels, then `pip install -r`) are built on the same base from the same wheels:

- the wheels downloaded into an empty shared cache (seconds, bytes);
- cold build (no layer cache, no dependency image), code-only rebuild, and a second
  project with the same lock built cold on the same engine;
- image size against base + site-packages and against naive; bytes sent to the engine
  (context) and served over loopback;
- reproducibility: bundler's own images removed, a second cold build, layer diff IDs
  and labels compared;
- hand-off: `--export` (peak RSS of the exporting process, bytes, sha256 beside it) and
  `--push` to a loopback registry twice, the second after a code-only change (layers
  and bytes the registry received).

Prints figures and ratios; never pass/fail. Removes every image, file and registry it made.

    python bench/bench_build.py [--example cpu|cuda|both] [--base IMAGE] [--rebuild-only [--compare OTHER_CHECKOUT]]

``--rebuild-only`` measures the code-only rebuild alone, side by side: the whole `bundler
build` process as the user runs it, the same rebuild inside this process, and the engine's
own share of it (the build of the same project layers); ``--compare`` times another
checkout's `bundler build` process in turn with this one's, on the same project and load.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

CPU_WHEEL = Path("/opt/wheels/torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl")
NAIVE = """\
FROM {base}
COPY . /app
WORKDIR /app
RUN python3.11 -m venv /opt/venv && /opt/venv/bin/pip install --no-index --find-links /app/wheels --no-cache-dir -r requirements.txt
ENV PYTHONPATH=/app/src
"""
MB = 1e6
EXPORT = """\
import sys
from pathlib import Path
from bundler import engine
from bundler.image.handoff import export
result = export(engine.connect(), sys.argv[1], Path(sys.argv[2]), names=[sys.argv[1]])
print(result.size, result.sha256)
"""


def timed(function, *args, **kwargs):
    started = time.monotonic()
    value = function(*args, **kwargs)
    return value, time.monotonic() - started


class EngineClock:
    """Seconds spent in the engine's build calls (the rest of a build is bundler's own work)."""

    def __init__(self) -> None:
        from bundler.image import build, deps

        self.seconds = 0.0
        self.modules = (build, deps)
        self.original = build.run_engine_build
        for module in self.modules:
            module.run_engine_build = self._timed

    def _timed(self, *args, **kwargs):
        value, seconds = timed(self.original, *args, **kwargs)
        self.seconds += seconds
        return value

    def take(self) -> float:
        seconds, self.seconds = self.seconds, 0.0
        return seconds


def folder_bytes(folder: Path) -> int:
    return sum(path.stat().st_size for path in Path(folder).rglob("*") if path.is_file())


def change_code(project: Path, mark: str) -> None:
    model = next((project / "src").rglob("model.py"))
    model.write_text(model.read_text() + f"\n# code-only change {mark}\n")


def remove(client, *references) -> None:
    import docker.errors

    for reference in references:
        try:
            client.images.remove(reference, force=True)
        except docker.errors.APIError:
            pass


def site_packages_bytes(client, tag: str) -> int:
    out = client.containers.run(tag, ["du", "-sb", "/opt/venv/lib/python3.11/site-packages"], remove=True, network_mode="none")
    return int(out.split()[0])


def export_rss(work: Path, tag: str) -> tuple[int, int, float]:
    """(bytes, peak RSS of the exporting process, seconds): bundler's export in a process of its own."""
    dest = work / "export.tar"
    started = time.monotonic()
    process = subprocess.Popen([sys.executable, "-c", EXPORT, tag, str(dest)], stdout=subprocess.PIPE, cwd=Path(__file__).parents[1])
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.monotonic() - started
    size = int(process.stdout.read().split()[0]) if status == 0 else 0
    assert (work / "export.tar.sha256").read_text().split()[1] == "export.tar"
    dest.unlink()
    (work / "export.tar.sha256").unlink()
    return size, usage.ru_maxrss * 1024, seconds


def push_twice(project: Path, builder, bundle_for, base: str, work: Path, client) -> dict:
    """Push, change code, rebuild, push again: what the registry received each time."""
    from tests.registry import running_registry

    figures = {}
    with running_registry(work / "registry") as address:
        storage = work / "registry" / "storage"
        reference = f"{address}/bench/example:1"
        result, seconds = timed(builder.run_build, bundle_for(project), base=base, tag="bench/bundler:push", push=reference)
        figures["first"] = (result.push, seconds, folder_bytes(storage))
        change_code(project, "push")
        result, seconds = timed(builder.run_build, bundle_for(project), base=base, tag="bench/bundler:push", push=reference)
        figures["second"] = (result.push, seconds, folder_bytes(storage) - figures["first"][2])
        remove(client, reference, "bench/bundler:push")
    return figures


class Naive:
    """The naive Dockerfile's folder: the project, the same wheel files (hard links), requirements.txt."""

    def __init__(self, project: Path, wheels: list, body: str, base: str, work: Path) -> None:
        self.folder = work / "naive"
        shutil.copytree(project, self.folder, ignore=shutil.ignore_patterns("runs"))
        (self.folder / "wheels").mkdir()
        for wheel in wheels:
            os.link(wheel.path, self.folder / "wheels" / wheel.filename)  # the same files, not a copy
        (self.folder / "requirements.txt").write_text(body)
        (self.folder / "Dockerfile").write_text(NAIVE.format(base=base))
        self.context = folder_bytes(self.folder)

    def build(self, client, tag: str, cold: bool) -> tuple[object, float]:
        (image, _), seconds = timed(client.images.build, path=str(self.folder), tag=tag, rm=True, network_mode="none", nocache=cold)
        return image, seconds


def example_project(kind: str, work: Path, name: str = "example") -> Path:
    from bundler.lock.run import run_lock
    from bundler.target.bundle import load_bundle
    from tests.conftest import scaffold_project
    from tests.fakeindex import real_torch_index

    if kind == "cpu":
        os.environ["BUNDLER_INDEX_MAP"] = "https://download.pytorch.org/whl=" + real_torch_index(work / "torchindex", CPU_WHEEL)
        project = scaffold_project(work / name)
        run_lock(load_bundle(project), cpu=True)
    else:
        project = scaffold_project(work / name, backend="cuda", accelerator="12.8", torch_version="2.9.1", python_version="3.11")
        run_lock(load_bundle(project), cuda="12.8", torch="2.9.1", torch_index="pypi")
    return project


def twin_of(project: Path, work: Path) -> Path:
    """A second project (another name and code) with the same lock."""
    twin = shutil.copytree(project, work / "twin", ignore=shutil.ignore_patterns("runs"))
    (twin / "bundle.toml").write_text((twin / "bundle.toml").read_text().replace('name = "Example"', 'name = "Twin"'))
    change_code(twin, "twin")
    return twin


def process_rebuilds(project: Path, base: str, repeat: int, trees: tuple[Path, ...] = ()) -> list[list[float]]:
    """Wall seconds of the whole `bundler build` process after a code-only change, as the user runs it:
    one list per tree (this checkout's bundler first, then each of ``trees``, in turn, under the same load)."""
    roots = (Path(__file__).parents[1], *trees)
    seconds: list[list[float]] = [[] for _ in roots]
    for turn in range(repeat):
        for index, root in enumerate(roots):
            change_code(project, f"process-{turn}-{index}")
            argv = [sys.executable, "-m", "bundler", "build", str(project), "--base", base, "--tag", "bench/bundler:warm"]
            done, took = timed(subprocess.run, argv, capture_output=True, text=True, cwd=root)  # cwd's bundler is the one run
            if done.returncode != 0:
                raise SystemExit(f"bundler build ({root}) failed: {done.stderr[-2000:]}")
            seconds[index].append(took)
    return seconds


def measure_rebuild(kind: str, base: str, work: Path, repeat: int, compare: tuple[Path, ...] = ()) -> None:
    """The code-only rebuild only: process wall time against the engine's own build time for the same layers
    (and the process of each ``compare`` tree, another checkout of bundler, in turn with this one's)."""
    from bundler.image import build as builder
    from bundler.target.bundle import load_bundle

    os.environ["BUNDLER_CACHE_DIR"] = str(work / "cache")
    project = example_project(kind, work)
    first = builder.run_build(load_bundle(project), base=base, tag="bench/bundler:warm")  # the dependency image, made or reused
    clock = EngineClock()
    in_process = []
    for turn in range(repeat):
        change_code(project, f"warm-{turn}")
        in_process.append((timed(builder.run_build, load_bundle(project), base=base, tag="bench/bundler:warm")[1], clock.take()))
    whole, *others = process_rebuilds(project, base, repeat, compare)
    engine_share = statistics.median(e for _, e in in_process)
    print(f"\n== {kind}: code-only rebuild, dependency image {first.built.deps.reference} (reused: {first.built.deps.reused}) ==")
    print(f"load average before: {os.getloadavg()[0]:.1f}")
    if os.environ.get("PYTHONDONTWRITEBYTECODE"):  # an installed bundler has its bytecode: pip compiles it at install time
        print("PYTHONDONTWRITEBYTECODE is set: every process compiles bundler's modules from source (unset it to time what users run)")
    print("whole `bundler build` process  " + " ".join(f"{s:.2f}" for s in whole) + f"  median {statistics.median(whole):.2f} s")
    for tree, seconds in zip(compare, others, strict=True):
        print(
            f"  the same, bundler of {tree}  "
            + " ".join(f"{s:.2f}" for s in seconds)
            + f"  median {statistics.median(seconds):.2f} s = {statistics.median(seconds) / engine_share:.2f}x the engine"
        )
    print(
        "in this process                "
        + " ".join(f"{s:.2f}" for s, _ in in_process)
        + f"  median {statistics.median(s for s, _ in in_process):.2f} s"
    )
    print("the engine's build of the layers " + " ".join(f"{e:.2f}" for _, e in in_process) + f"  median {engine_share:.2f} s")
    print(f"process / engine {statistics.median(whole) / engine_share:.2f}x (target <= 2); load average after: {os.getloadavg()[0]:.1f}")
    import docker

    remove(docker.from_env(timeout=600), "bench/bundler:warm", first.built.deps.reference)


def measure(kind: str, base: str, work: Path, repeat: int) -> None:
    import docker

    from bundler.image import build as builder
    from bundler.image import wheelhouse
    from bundler.lock.lockfile import fresh_lock
    from bundler.target.bundle import load_bundle

    client = docker.from_env(timeout=3600)  # the naive builds and the figures; bundler's builds connect through bundler.engine
    os.environ["BUNDLER_CACHE_DIR"] = str(work / "cache")  # an empty shared cache
    project, lock_s = timed(example_project, kind, work)
    bundle = load_bundle(project)
    lock = fresh_lock(bundle)
    wheels, download_s = timed(wheelhouse.gather, lock, bundle.target, verify=False)
    naive = Naive(project, wheels, lock.install_body, base, work)
    clock = EngineClock()
    # cold builds, bundler and naive in turn; bundler's own images are removed between its cold builds
    ours, theirs, images, cold = [], [], [], None
    for turn in range(repeat):
        if cold is not None:
            remove(client, "bench/bundler:cold", cold.built.deps.reference)
        cold, seconds = timed(builder.run_build, load_bundle(project), base=base, tag="bench/bundler:cold", no_cache=True)
        ours.append((seconds, clock.take()))
        images.append(client.images.get(cold.image_id))
        if turn:
            remove(client, "bench/naive:cold")
        theirs.append(naive.build(client, "bench/naive:cold", cold=True)[1])
    same_layers = [a == b for a, b in zip(images[0].attrs["RootFS"]["Layers"], images[1].attrs["RootFS"]["Layers"], strict=True)]
    same_labels = images[0].labels == images[1].labels
    change_code(project, "1")
    warm, warm_s = timed(builder.run_build, load_bundle(project), base=base, tag="bench/bundler:warm")
    warm_engine = clock.take()
    in_process = []  # the same code-only rebuild in this process, timed with the engine's share, for the ratio below
    for turn in range(3):
        change_code(project, f"warm-{turn}")
        in_process.append((timed(builder.run_build, load_bundle(project), base=base, tag="bench/bundler:warm")[1], clock.take()))
    whole = process_rebuilds(project, base, 5)[0]
    change_code(naive.folder, "1")
    naive_warm, naive_warm_s = naive.build(client, "bench/naive:warm", cold=False)
    twin = twin_of(project, work)
    other, other_s = timed(builder.run_build, load_bundle(twin), base=base, tag="bench/bundler:twin")
    base_bytes = client.images.get(base).attrs["Size"]
    site = site_packages_bytes(client, warm.tag)
    remove(client, "bench/naive:cold", "bench/naive:warm", "bench/bundler:cold", "bench/bundler:twin")
    export_bytes, export_peak, export_s = export_rss(work, warm.tag)
    pushes = push_twice(project, builder, load_bundle, base, work, client)
    remove(client, "bench/bundler:warm", warm.built.deps.reference)
    cold_s, cold_engine = statistics.median(s for s, _ in ours), statistics.median(e for _, e in ours)
    naive_cold = statistics.median(theirs)
    naive_figures = {"cold": naive_cold, "rebuild": naive_warm_s, "size": naive_warm.attrs["Size"], "context": naive.context}

    naive = naive_figures
    print(f"\n== {kind}: {bundle.target.describe()}, base {base} ({base_bytes / MB:.1f} MB) ==")
    print(
        f"lock {lock_s:.1f} s; {len(wheels)} wheels, {sum(w.size for w in wheels) / MB:.1f} MB downloaded into an empty cache "
        f"in {download_s:.1f} s (a second project reuses them: 0 bytes downloaded)"
    )
    print(
        f"cold build          bundler {cold_s:7.1f} s (engine {cold_engine:.1f} s)   naive {naive['cold']:7.1f} s   "
        f"bundler/naive {cold_s / naive['cold']:.2f} (target <= 1.0); medians of {repeat}, in turn:"
    )
    print("                    bundler " + " ".join(f"{s:.1f}" for s, _ in ours) + "   naive " + " ".join(f"{s:.1f}" for s in theirs))
    print(
        f"code-only rebuild   bundler {warm_s:7.2f} s (engine {warm_engine:.2f} s)   naive {naive['rebuild']:7.1f} s   "
        f"naive/bundler {naive['rebuild'] / warm_s:.1f}x (target >= 50x)"
    )
    engine_share = statistics.median(e for _, e in in_process)
    print(
        f"code-only rebuild, the whole `bundler build` process (median of {len(whole)}: "
        + " ".join(f"{s:.2f}" for s in whole)
        + f") {statistics.median(whole):.2f} s; in this process {statistics.median(s for s, _ in in_process):.2f} s, "
        f"of which the engine's build {engine_share:.2f} s; process / engine {statistics.median(whole) / engine_share:.1f}x (target <= 2)"
    )
    print(
        f"second project, same lock, cold: {other_s:.2f} s = {other_s / warm_s:.2f} x the code-only rebuild (target <= 2); "
        f"dependency image reused: {other.built.deps.reused}"
    )
    size = warm.size.total
    floor = base_bytes + site
    print(
        f"image size          bundler {size / MB:7.1f} MB   naive {naive['size'] / MB:7.1f} MB   base + site-packages {floor / MB:.1f} MB"
    )
    print(f"  bundler / (base + site-packages)      {size / floor:6.3f}   (target <= 1.05; the CUDA image aims at <= 1.02)")
    print(f"  bundler / naive                       {size / naive['size']:6.3f}")
    deps = cold.built.deps  # the last cold build's
    print(
        f"sent to the engine  bundler cold {(deps.context_bytes + cold.built.context_bytes) / MB:.3f} MB (dependency Dockerfile "
        f"{deps.context_bytes / 1e3:.1f} kB + project {cold.built.context_bytes / MB:.3f} MB), {deps.served_bytes / MB:.1f} MB served over "
        f"loopback (route: {deps.route}); code-only rebuild {warm.built.context_bytes / MB:.3f} MB; naive {naive['context'] / MB:.1f} MB"
    )
    print(
        f"reproducible        the first two cold builds, engine emptied of bundler's images in between: layers the same {same_layers} "
        f"({sum(same_layers)}/{len(same_layers)}), labels the same: {same_labels}"
    )
    peak = f"peak RSS of the exporting process {export_peak / MB:.1f} MB (target <= 200)"
    print(f"export              {export_bytes / MB:.1f} MB in {export_s:.1f} s, {peak}")
    for which in ("first", "second"):
        push, seconds, received = pushes[which]
        print(
            f"push ({which:6})       {seconds:.1f} s with its build; layers sent {push['layers_sent']}, "
            f"already there {push['layers_present']}, "
            f"{push['bytes_sent'] / MB:.1f} MB by the engine's count; the registry received {received / MB:.1f} MB"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--example", choices=("cpu", "cuda", "both"), default="both")
    parser.add_argument("--base", default="bundler-test/bookworm-python3.11:1")
    parser.add_argument("--repeat", type=int, default=0, help="cold builds of each, in turn (default: 3 for cpu, 2 for cuda; at least 2)")
    parser.add_argument("--rebuild-only", action="store_true", help="only the code-only rebuild: process, in-process and engine time")
    parser.add_argument("--compare", type=Path, action="append", default=[], help="with --rebuild-only: another checkout, timed in turn")
    args = parser.parse_args()
    if args.rebuild_only:
        for kind in ("cpu", "cuda") if args.example == "both" else (args.example,):
            work = Path(tempfile.mkdtemp(prefix=f"bench-rebuild-{kind}-"))
            try:
                measure_rebuild(kind, args.base, work, max(5, args.repeat), tuple(args.compare))
            finally:
                shutil.rmtree(work, ignore_errors=True)
        return
    for kind in ("cpu", "cuda") if args.example == "both" else (args.example,):
        work = Path(tempfile.mkdtemp(prefix=f"bench-build-{kind}-"))
        try:
            measure(kind, args.base, work, max(2, args.repeat or {"cpu": 3, "cuda": 2}[kind]))
        finally:
            shutil.rmtree(work, ignore_errors=True)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(f"\n(peak RSS of this benchmark process: {peak / MB:.0f} MB)")


if __name__ == "__main__":
    main()
