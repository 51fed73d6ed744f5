"""Real projects' dependency sets, from their requirements to an image where every import works.

For each folder of bench/projects/ (the requirement lists of public ML projects, written
down as facts; see docs/benchmarks.md for the sources), as a user would run it:
`bundler lock --cpu`, `bundler build`, then the diagnose command the build printed, run
as printed. Prints one row per project: lock and build seconds, image size, the pins built
from source, how many modules imported, the diagnose exit code, and the result — or the
refusal (the line or module named, and what to do).

PyTorch's index is unreachable here: BUNDLER_INDEX_MAP points its cpu index at a local
page holding the real torch 2.13.0+cpu wheel; torchvision and torchaudio lines are
commented out (their +cpu builds exist only there, and a stand-in breaks the packages that
detect and use them: transformers, lightning). Everything else comes from PyPI. The base is the locally debootstrapped Debian
bookworm + Python 3.11 of the tests (no registry is reachable).

Usage: python bench/bench_projects.py [--only NAME ...] [--keep-images] [--cache DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests import dockerenv  # noqa: E402
from tests.fakeindex import real_torch_index  # noqa: E402

WHEEL = Path("/opt/wheels/torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl")
PROJECTS = REPO / "bench" / "projects"
BUNDLE = """[project]
name = "{name}"
package = "{package}"
entry = "python -c 'import torch'"

[target]
backend = "cpu"
accelerator = ""
torch = "2.13.0"
python = "3.11"
platform = "linux_x86_64"
base_image = "{base}"
base_digest = ""

[build]
lock = "requirements-rebuild.txt"
size_budget_mb = 20000
"""
UNREACHABLE = ("torchvision", "torchaudio")  # only PyTorch's index has their +cpu builds, and it cannot be reached here
_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
_BUILT = re.compile(r"^Built (\S+?)-\d\S*\.whl in (\d+ s)\.$", re.MULTILINE)  # the builder's line: seconds per compiled package


def drop_unreachable(project: Path) -> list[str]:
    """Comment out the torchvision/torchaudio lines (a stand-in would break the packages that detect and use them)."""
    dropped = []
    for path in sorted(project.glob("*.in")) + sorted(project.glob("*.txt")):
        lines = path.read_text().splitlines()
        for index, line in enumerate(lines):
            match = _NAME.match(line)
            if match and match.group(1).lower() in UNREACHABLE:
                dropped.append(f"{path.name}:{index + 1}: {line.strip()}")
                lines[index] = f"# (bench: PyTorch's index is unreachable here) {line}"
        path.write_text("\n".join(lines) + "\n")
    return dropped


def run(argv: list[str], env: dict, timeout: int = 3600) -> tuple[float, subprocess.CompletedProcess]:
    """Run a command as a user would: its progress lines (stderr) shown as they come, prefixed with the elapsed seconds, and kept."""
    started = time.perf_counter()
    with subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as process:
        out: list[str] = []
        reader = threading.Thread(target=lambda: out.append(process.stdout.read()), daemon=True)  # type: ignore[union-attr]
        reader.start()
        err = []
        for line in process.stderr:  # type: ignore[union-attr]
            err.append(line)
            print(f"  [{time.perf_counter() - started:7.1f}s] {line}", end="", file=sys.stderr, flush=True)
        process.wait(timeout=timeout)
        reader.join()
    done = subprocess.CompletedProcess(argv, process.returncode, "".join(out), "".join(err))
    return time.perf_counter() - started, done


def document(done: subprocess.CompletedProcess) -> dict:
    try:
        return json.loads(done.stdout)
    except ValueError:
        return {}


def refusal(data: dict, done: subprocess.CompletedProcess) -> str:
    error = data.get("error") or {}
    text = (error.get("message") or done.stderr.strip()[-400:]) + (f" Hint: {error['hint']}" if error.get("hint") else "")
    return f"exit {done.returncode}: {' '.join(text.split())[:4000]}"


def one(name: str, work: Path, env: dict, base: str) -> dict:
    project = work / name
    shutil.copytree(PROJECTS / name, project)
    (project / "bundle.toml").write_text(BUNDLE.format(name=name, package=name.replace("-", "_"), base=base))
    bundler = [sys.executable, "-m", "bundler"]
    row: dict = {"project": name, "dropped": drop_unreachable(project)}
    seconds, done = run([*bundler, "lock", str(project), "--json"], env)
    data = document(done)
    row.update(lock_s=round(seconds, 1), lock_exit=done.returncode)
    if done.returncode != 0:
        return row | {"result": "lock refused", "detail": refusal(data, done)}
    pins = sum(1 for line in (project / "requirements-rebuild.txt").read_text().splitlines() if "==" in line and not line.startswith("#"))
    row.update(pins=pins, source_builds=[item["name"] for item in data.get("source_builds", [])], notes=data.get("notes", []))
    tag = f"bundler-bench/{name}:1"
    seconds, done = run([*bundler, "build", str(project), "--tag", tag, "--json"], env)
    data = document(done)
    row.update(build_s=round(seconds, 1), build_exit=done.returncode, compiled=dict(_BUILT.findall(done.stderr)))
    deps_image = (data.get("context") or {}).get("deps_image") or _deps_image(done.stderr)
    row["images"] = [tag, deps_image]
    if done.returncode != 0:
        imports = ((data.get("error") or {}) and data.get("imports")) or {}
        return row | {"result": "build refused", "detail": refusal(data, done), "imports": imports}
    imports = data["smoke_test"]["imports"]
    row.update(
        image_mb=data["size"]["total_mb"],
        modules=f"{imports['imported']}/{imports['modules']}",
        stage_images_removed=len(data["context"]["stage_images_removed"]),
        diagnose_command=data["commands"]["diagnose"],
    )
    seconds, ran = run(["bash", "-c", data["commands"]["diagnose"]], env, timeout=1200)
    row.update(diagnose_s=round(seconds, 1), diagnose_exit=ran.returncode)
    verdict = next((line for line in ran.stdout.splitlines() if line.startswith("verdict:")), ran.stdout.strip()[-200:])
    row["result"] = "image works" if ran.returncode == 0 else f"diagnose failed: {verdict}"
    return row


def _deps_image(stderr: str) -> str | None:
    line = next((text for text in stderr.splitlines() if text.startswith("Dependency image bundler/deps:")), "")
    return "bundler/deps:" + line.split("bundler/deps:")[1].split(":")[0].split()[0] if line else None


def remove_images(references: list) -> None:
    for reference in references:
        if reference:
            subprocess.run(["docker", "rmi", "-f", reference], capture_output=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", help="project folders to run (default: all)")
    parser.add_argument("--keep-images", action="store_true", help="leave the images (default: removed after each project)")
    parser.add_argument("--cache", type=Path, help="BUNDLER_CACHE_DIR (default: a fresh folder, so every figure is cold)")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "out" / "projects.json")
    args = parser.parse_args()
    import docker

    base = dockerenv.ensure_base_image(docker.from_env(), "bookworm")
    work = Path(tempfile.mkdtemp(prefix="bench-projects-"))
    cache = args.cache or work / "cache"
    env = {
        **os.environ,
        "BUNDLER_CACHE_DIR": str(cache),
        "BUNDLER_INDEX_MAP": f"https://download.pytorch.org/whl={real_torch_index(work / 'torch', WHEEL)}",
    }
    names = args.only or sorted(path.name for path in PROJECTS.iterdir() if path.is_dir())
    rows = []
    try:
        for name in names:
            print(f"== {name}", flush=True)
            row = one(name, work / "projects", env, base)
            rows.append(row)
            print(json.dumps(row, indent=2), flush=True)
            if not args.keep_images:
                remove_images(row.get("images", []))
    finally:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(rows, indent=2) + "\n")
        shutil.rmtree(work, ignore_errors=True)
    print("\n| project | lock s | pins | built from source | build s | image MB | imports | diagnose | result |")
    print("|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        print(
            f"| {row['project']} | {row.get('lock_s', '')} | {row.get('pins', '')} | {', '.join(row.get('source_builds', [])) or '—'} | "
            f"{row.get('build_s', '')} | {row.get('image_mb', '')} | {row.get('modules', '')} | {row.get('diagnose_exit', '')} | "
            f"{row['result']}: {row.get('detail', '')[:200]} |"
        )


if __name__ == "__main__":
    main()
