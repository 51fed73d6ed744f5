"""Figures for the runs evidence: verify on a 10,000-document run, and resume overhead.

    python bench/bench_runs.py [--documents 10000] [--keep DIR]

Generates a real project (bundler's template) whose pilot input holds N synthetic
documents of four categories (one invalid, rejected as planned), then measures side by
side in one session:
  1. an uninterrupted pilot run of the N documents;
  2. the same run killed (SIGKILL through the test-only tests/pilot_faults.py) after 50% of
     its result lines, then the resumed run; the ratio compares the resume with the
     remaining half of (1);
  3. `verify` of the 10,000-document run without the checkpoint reload, then the
     checkpoint reload in a fresh process on its own (it re-predicts every accepted document).
Prints figures; never passes or fails on time.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

WORDS = {
    "invoice": [
        "invoice",
        "total",
        "amount",
        "due",
        "payment",
        "vat",
        "net",
        "terms",
        "remit",
        "account",
        "billing",
        "order",
        "unit",
        "price",
    ],
    "contract": [
        "agreement",
        "party",
        "parties",
        "clause",
        "term",
        "termination",
        "liability",
        "governed",
        "law",
        "obligations",
        "hereby",
        "warranty",
    ],
    "support_ticket": [
        "error",
        "crash",
        "login",
        "password",
        "reset",
        "ticket",
        "issue",
        "customer",
        "help",
        "cannot",
        "screen",
        "app",
        "update",
    ],
    "research_abstract": [
        "study",
        "results",
        "method",
        "propose",
        "dataset",
        "evaluate",
        "model",
        "significant",
        "analysis",
        "experiments",
        "baseline",
    ],
}
COMMON = ["the", "of", "and", "to", "a", "in", "for", "is", "on", "with", "this", "that", "by", "at", "from"]


def make_project(base: Path, documents: int) -> Path:
    from bundler import scaffold

    answers = scaffold.build_answers(base / "bench", name=None, backend=None, settings={"package_name": "bench_pilot"})
    project = scaffold.scaffold(base / "bench", answers).dest
    data = project / "data/pilot"
    shutil.rmtree(data)
    data.mkdir()
    rng = random.Random(7)
    entries = []
    categories = list(WORDS)
    for index in range(1, documents + 1):
        doc_id, name = f"doc-{index:05d}", f"doc-{index:05d}.txt"
        if index == documents:
            body, label, expect = (
                "Caf\xe9 ticket \u2013 exported in Windows-1252, long enough to pass the length limit".encode("cp1252"),
                None,
                "reject",
            )
        else:
            label, expect = categories[index % 4], "accept"
            words = [rng.choice(WORDS[label] if rng.random() < 0.3 else COMMON) for _ in range(rng.randint(60, 400))]
            body = (" ".join(words) + "\n").encode("utf-8")
        (data / name).write_bytes(body)
        entries.append(
            {"id": doc_id, "file": name, "sha256": hashlib.sha256(body).hexdigest(), "bytes": len(body), "label": label, "expect": expect}
        )
    (data / "MANIFEST.json").write_text(json.dumps({"version": 1, "documents": entries}))
    config_path = project / "config/pilot.json"
    config = json.loads(config_path.read_text())
    config["expected_documents"] = documents
    config["stop_rules"]["quality_below_threshold"]["check_set"] = [e["id"] for e in entries[:100]]
    config_path.write_text(json.dumps(config, indent=2))
    return project


def pilot(project: Path, *args: str, fault: str | None = None) -> tuple[float, int]:
    env = {**os.environ, "PYTHONPATH": str(project / "src")}
    entry = [str(REPO / "tests/pilot_faults.py"), fault, "bench_pilot"] if fault else ["-m", "bench_pilot.pilot"]
    started = time.perf_counter()
    result = subprocess.run([sys.executable, *entry, *args], cwd=project, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if result.returncode not in (0, -9):
        sys.exit(f"pilot failed ({result.returncode}): {result.stderr[-2000:]}")
    return elapsed, result.returncode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--documents", type=int, default=10_000)
    parser.add_argument("--keep", type=Path, help="generate the project here and keep it")
    args = parser.parse_args()
    base = args.keep or Path(tempfile.mkdtemp(prefix="bench-runs-"))
    base.mkdir(parents=True, exist_ok=True)
    try:
        run(base, args.documents)
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)


def run(base: Path, documents: int) -> None:
    from bundler.evidence.reload import reload_in_fresh_process
    from bundler.evidence.verify import verify_run

    started = time.perf_counter()
    project = make_project(base, documents)
    print(f"generated a project with {documents} documents in {time.perf_counter() - started:.1f} s")

    full, _ = pilot(project, "--run-id", "whole")
    half = documents // 2
    killed, code = pilot(project, "--run-id", "halved", fault=f"items:{half}")
    assert code == -9, "the fault hook did not kill the pilot"
    resumed, _ = pilot(project, "--resume", "halved")
    same = all(
        (project / "runs/whole" / n).read_bytes() == (project / "runs/halved" / n).read_bytes()
        for n in ("predictions.jsonl", "rejections.jsonl")
    )
    remaining = full - killed
    print(f"uninterrupted run:                 {full:7.2f} s")
    print(f"killed after {half} result lines:  {killed:7.2f} s  (so the remaining half of the uninterrupted run took ~{remaining:.2f} s)")
    print(f"resumed run (the other half):      {resumed:7.2f} s  -> resume / remaining half = {resumed / remaining:.2f} (target <= 1.2)")
    print(f"resumed results equal the uninterrupted ones: {same}")

    run_dir = project / "runs/whole"
    timings = []
    for _ in range(5):
        t0 = time.perf_counter()
        result = verify_run(run_dir, reload=False)
        timings.append(time.perf_counter() - t0)
    assert result.accepted, [c.as_dict() for c in result.problems]
    lines = sum(1 for _ in open(run_dir / "predictions.jsonl"))
    print(
        f"verify of {lines + 1} result lines, checkpoint reload excluded: best {min(timings):.3f} s, median {sorted(timings)[2]:.3f} s "
        "(target <= 2 s)"
    )
    t0 = time.perf_counter()
    accepted = [json.loads(line)["id"] for line in open(run_dir / "predictions.jsonl")]
    ok, _ = reload_in_fresh_process(run_dir, accepted)
    seconds = time.perf_counter() - t0
    print(f"checkpoint reload in a fresh process, all {len(accepted)} accepted documents re-predicted: {seconds:.2f} s, ok={ok}")


if __name__ == "__main__":
    main()
