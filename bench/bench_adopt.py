"""Adopting real repositories: `bundler init --cpu`, `lock`, `build`, then a command of the
repository's own inside the image, with nothing of the repository changed.

Each repository is a folder you exported yourself (bench/adopt/heldout.json names the
repository, the commit and the command; no code of theirs is kept here). For each, as a
user would: `bundler init --cpu --no-input --json`; then the two changes this machine
needs and no user would (no registry and no PyTorch index are reachable here): the
base image is the locally debootstrapped Debian bookworm + Python 3.11, and torch is
2.13.0 (the one real torch wheel here) on Python 3.11, passed as `bundler lock --torch 2.13.0
--python 3.11` when init chose another; then `bundler lock`, `bundler build`, and `docker run IMAGE <command>`.
A hint step of the spec (a new file, a bundle.toml key) is applied only after a refusal,
and counted. Every original file's sha256 is compared before and after.

Usage: python bench/bench_adopt.py --repos DIR [--spec FILE] [--only NAME ...] [--cache DIR]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests import dockerenv  # noqa: E402
from tests.fakeindex import real_torch_index  # noqa: E402

WHEEL = Path("/opt/wheels/torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl")
SPEC = REPO / "bench" / "adopt" / "heldout.json"
REACHABLE_TORCH = "2.13.0"
BASE_PYTHON = "3.11"  # the local base image's


def tree_hashes(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


def run(argv: list[str], env: dict, timeout: int = 3600) -> tuple[float, subprocess.CompletedProcess]:
    start = time.monotonic()
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout)
    return time.monotonic() - start, done


def last_error(done: subprocess.CompletedProcess) -> str:
    lines = [line for line in done.stderr.splitlines() if line.startswith("Error:") or line.strip().startswith(("Hint", "  "))]
    error = next((i for i, line in enumerate(lines) if line.startswith("Error:")), None)
    return " ".join(lines[error:])[:600] if error is not None else done.stderr.strip()[-600:]


def set_key(path: Path, section: str, key: str, value: str) -> None:
    import tomlkit

    document = tomlkit.parse(path.read_text())
    document[section][key] = value
    path.write_text(tomlkit.dumps(document))


def one(item: dict, root: Path, env: dict, base: str) -> dict:
    bundler = [sys.executable, "-m", "bundler"]
    before = tree_hashes(root)
    seconds, done = run([*bundler, "init", str(root), "--cpu", "--no-input", "--json"], env)
    row: dict = {"repo": item["repo"], "init_s": round(seconds, 1), "init_exit": done.returncode}
    if done.returncode != 0:
        return row | {"result": "init refused", "detail": last_error(done)}
    adopted = json.loads(done.stdout)
    row.update(
        source=adopted["source"]["file"] if adopted["source"] else None,
        requirements=len(adopted["source"]["requirements"]) if adopted["source"] else 0,
        target=f"torch {adopted['target']['torch']} python {adopted['target']['python']}",
        entry=adopted["entry"]["command"],
        unreadable=adopted["unreadable"],
        unmapped=adopted["unmapped"],
        disagreements=adopted["disagreements"],
        adjusted=adopted["adjusted"],
        untouched=adopted["untouched"],
    )
    set_key(root / "bundle.toml", "target", "base_image", base)
    hints = list(item.get("hints", []))
    row["hints_applied"] = 0
    while True:
        torch = ["--torch", REACHABLE_TORCH] if adopted["target"]["torch"] != REACHABLE_TORCH else []
        python = ["--python", BASE_PYTHON] if adopted["target"]["python"] != BASE_PYTHON else []
        row["machine_flags"] = " ".join(torch + python)
        seconds, done = run([*bundler, "lock", str(root), *torch, *python, "--json"], env)
        set_key(root / "bundle.toml", "target", "base_image", base)  # the lock follows the base to the Target's registry image
        row.update(lock_s=round(seconds, 1), lock_exit=done.returncode)
        if done.returncode == 0:
            tag = f"bundler-adopt/{item['name']}:1"
            seconds, done = run([*bundler, "build", str(root), "--tag", tag, "--json"], env)
            row.update(build_s=round(seconds, 1), build_exit=done.returncode)
            if done.returncode == 0:
                seconds, ran = run(["docker", "run", "--rm", tag, *item["command"]], env, timeout=600)
                row.update(command=" ".join(item["command"]), command_s=round(seconds, 1), command_exit=ran.returncode)
                subprocess.run(["docker", "rmi", "-f", tag], capture_output=True)
                if ran.returncode == 0:
                    row["result"] = "command ran in the image"
                    break
                failure = f"command failed: {(ran.stderr or ran.stdout).strip()[-300:]}"
                row.setdefault("refusals", []).append(failure)
                if not hints:
                    row["result"] = failure
                    break
                apply_hint(root, hints.pop(0))
                row["hints_applied"] += 1
                continue
        row.setdefault("refusals", []).append(last_error(done))
        if not hints:
            row["result"] = "refused"
            break
        apply_hint(root, hints.pop(0))
        row["hints_applied"] += 1
    after = tree_hashes(root)
    row["changed"] = sorted(name for name, digest in before.items() if after.get(name) != digest)
    return row


def apply_hint(root: Path, hint: dict) -> None:
    """A hint's change: a new file, lines appended to or pins loosened in the requirements.in bundler
    init wrote (never a file of the repository), a bundle.toml [build] key."""
    for name, text in hint.get("append", {}).items():
        assert name == "requirements.in"
        (root / name).write_text((root / name).read_text() + text)
    for name in hint.get("unpin", []):  # `pkg==1.2.3  # …` -> `pkg  # …` in init's requirements.in
        path = root / "requirements.in"
        path.write_text("\n".join(re.sub(rf"^({re.escape(name)})==\S+", r"\1", line) for line in path.read_text().splitlines()) + "\n")
    for name, text in hint.get("write", {}).items():
        if (root / name).exists():
            raise SystemExit(f"hint would overwrite {name}")
        (root / name).write_text(text)
    for key, value in hint.get("build", {}).items():
        set_key(root / "bundle.toml", "build", key, value)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repos", type=Path, required=True, help="folder holding one exported repository per spec name")
    parser.add_argument("--spec", type=Path, default=SPEC, help="the round: bench/adopt/heldout.json, heldout-r2.json")
    parser.add_argument("--only", nargs="*")
    parser.add_argument("--cache", type=Path)
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "out" / "adopt.json")
    args = parser.parse_args()
    import docker

    base = dockerenv.ensure_base_image(docker.from_env(), "bookworm")
    work = Path(tempfile.mkdtemp(prefix="bench-adopt-"))
    env = {
        **os.environ,
        "BUNDLER_CACHE_DIR": str(args.cache or work / "cache"),
        "BUNDLER_INDEX_MAP": f"https://download.pytorch.org/whl={real_torch_index(work / 'torch', WHEEL)}",
    }
    rows = []
    for item in json.loads(args.spec.read_text()):
        if args.only and item["name"] not in args.only:
            continue
        print(f"== {item['name']}", flush=True)
        rows.append(one(item, args.repos / item["name"], env, base))
        print(json.dumps(rows[-1], indent=2), flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
