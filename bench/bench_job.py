"""What `bundler job` costs, what checking its files costs, and how fast a missing rank is caught.

    python bench/bench_job.py [--repeat 5] [--skypilot-python PATH]

In one run, on a project locked against the tests' fake index:
- `bundler job sky|k8s|slurm` (fresh processes) next to `bundler --help`;
- the checks the tests apply: kubernetes-validate (strict, in-process), bash -n and
  shellcheck, SkyPilot's loader in its own virtual environment (made and timed here unless
  --skypilot-python names one);
- the collectives stage under torchrun: two "nodes" on loopback that meet, and a second
  node that hangs before stage 10, with BUNDLE_DIAG_JOIN_TIMEOUT=5: seconds to the verdict,
  against gloo's default timeout of 1800 s.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from common import row, run, timed  # noqa: E402

IMAGE = "registry.example.com/team/example@sha256:" + "5" * 64


def locked_project(work: Path) -> Path:
    from bundler.lock.run import run_lock
    from bundler.target.bundle import load_bundle
    from tests.conftest import scaffold_project
    from tests.fakeindex import build_fake_index

    index = build_fake_index(work / "index")
    os.environ.update(BUNDLER_INDEX_MAP=index.index_map(), BUNDLER_PIP_RETRIES="0", BUNDLER_CACHE_DIR=str(work / "cache"))
    project = scaffold_project(work / "example", backend="cuda", accelerator="12.8", torch_version="2.9.1", python_version="3.11")
    plan = project / "plan.toml"
    plan.write_text(plan.read_text().replace('card = "RTX 4090"', 'card = "B200"').replace("lots = 1", "lots = 4"))
    run_lock(load_bundle(project))
    return project


def commands(project: Path, repeat: int) -> None:
    bundler = [sys.executable, "-m", "bundler"]
    print(row("bundler --help", timed(lambda: run([*bundler, "--help"]), repeat)))
    for engine in ("sky", "k8s", "slurm"):
        argv = [*bundler, "job", engine, str(project), "--nodes", "2", "--image", IMAGE]
        print(row(f"bundler job {engine} --nodes 2", timed(lambda argv=argv: run(argv), repeat)))


def checks(project: Path, repeat: int, skypilot_python: str | None, work: Path) -> None:
    import kubernetes_validate
    import yaml

    documents = list(yaml.safe_load_all((project / "job-k8s.yaml").read_text()))
    version = kubernetes_validate.latest_version()
    validate = lambda: [kubernetes_validate.validate(d, version, strict=True) for d in documents]  # noqa: E731
    print(row("kubernetes-validate --strict (2 objects)", timed(validate, repeat)))
    script = str(project / "job-slurm.sbatch")
    print(row("bash -n + shellcheck (sbatch script)", timed(lambda: (run(["bash", "-n", script]), run(["shellcheck", script])), repeat)))
    if skypilot_python is None:
        venv = work / "skypilot-venv"
        start = time.perf_counter()
        run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)])
        subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "skypilot>=0.14,<1"], check=True, capture_output=True)
        print(f"{'skypilot venv made (pip cache as it is)':<44} {time.perf_counter() - start:8.1f} s")
        skypilot_python = str(venv / "bin" / "python")
    load = [skypilot_python, "-c", "import sys, sky; sky.Task.from_yaml(sys.argv[1])", str(project / "job-sky.yaml")]
    env = {"PATH": "/usr/bin:/bin", "HOME": str(work), "SKYPILOT_DISABLE_USAGE_COLLECTION": "1"}
    print(row("sky.Task.from_yaml, fresh process", timed(lambda: run(load, env=env), repeat)))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def two_nodes(work: Path, hang: bool) -> tuple[float, float, int]:
    """Seconds until the first node's torchrun ends, the stage's own seconds there, and its exit code;
    the second node is killed if it still runs."""
    for old in work.glob("rank*.json"):
        old.unlink()
    endpoint, run_id = f"127.0.0.1:{free_port()}", f"bench-{free_port()}"
    base = [sys.executable, "-m", "torch.distributed.run", "--nnodes", "2", "--nproc-per-node", "1", "--rdzv-backend", "c10d"]
    base += ["--rdzv-endpoint", endpoint, "--rdzv-id", run_id, str(REPO / "tests" / "collectives_rank.py"), str(work)]
    env = {**os.environ, "BUNDLE_DIAG_JOIN_TIMEOUT": "5"}
    start = time.perf_counter()
    first = subprocess.Popen(base, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    second = subprocess.Popen(base + (["--hang"] if hang else []), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    code = first.wait(timeout=300)
    seconds = time.perf_counter() - start
    if hang:  # its worker runs in a session of its own: kill it by its parent, then the agent
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == second.pid:
                    os.kill(int(stat.parent.name), 9)
            except (OSError, ValueError, IndexError):
                pass
        second.kill()
    second.wait(timeout=60)
    stage = max(json.loads(path.read_text())["seconds"] for path in work.glob("rank*.json"))
    return seconds, stage, code


def collectives(work: Path, repeat: int) -> None:
    for hang, name in ((False, "two nodes meet, all_reduce ok"), (True, "second node hangs: verdict after")):
        results = [two_nodes(work, hang) for _ in range(repeat)]
        codes = sorted({code for *_, code in results})
        print(row(f"torchrun x2, {name}", [seconds for seconds, _, _ in results], f"exit {codes}"))
        print(row("  of which stage 10 itself", [stage for _, stage, _ in results]))
    print("gloo's default process-group timeout: 1800 s; the join timeout above: 5 s")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--skypilot-python", help="an interpreter with skypilot (default: make a venv and time it)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-job-"))
    try:
        project = locked_project(work)
        commands(project, args.repeat)
        checks(project, args.repeat, args.skypilot_python, work)
        collectives(work, max(1, args.repeat // 2))
        print(f"(medians; job files written to {project} and then removed)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
