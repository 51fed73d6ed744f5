"""Reload a run's checkpoint in a fresh process and reproduce its stored predictions.

    python runs/<id>/reload.py runs/<id> [--json] [--no-compare]

Stand-alone (torch and the standard library): every run carries a copy of this file and
of model.py in runs/<id>/, so a copy of the run folder reloads on any machine with
torch, without the project. It loads model, optimizer, scheduler and RNG states
(``torch.load(weights_only=True)``: no pickled code runs), predicts the documents of
reload-sample.json one at a time, and compares them with predictions.jsonl.
Exit 0 when everything reloads and matches, 1 otherwise.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

try:
    from . import model
except ImportError:  # run as a script from runs/<id>/
    import model

SCORE_TOLERANCE = 1e-5
STATE_KEYS = ("model", "optimizer", "scheduler", "rng", "progress", "categories", "features")


def reload_run(run_dir: Path, compare: bool = True) -> dict:
    run_dir = Path(run_dir)
    report = {"ok": False, "loaded": [], "sample": [], "problems": []}
    problems = report["problems"]
    try:
        manifest = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))
        sample = json.loads((run_dir / "reload-sample.json").read_text(encoding="utf-8"))["documents"]
    except (OSError, ValueError, KeyError) as error:
        problems.append(f"cannot read the run's manifest.json or reload-sample.json: {error}")
        return report
    try:
        state, classifier, _, _ = model.load_checkpoint(run_dir / "checkpoint.pt", manifest["config"].get("training", {}))
    except Exception as error:  # any failure to reload is the finding itself
        first_line = (str(error).strip().splitlines() or [""])[0]
        problems.append(f"checkpoint.pt does not reload: {type(error).__name__}: {first_line}")
        return report
    report["loaded"] = sorted(state)
    missing = [key for key in STATE_KEYS if key not in state]
    if missing:
        problems.append(f"checkpoint.pt lacks {', '.join(missing)}")
    if state.get("config_sha256") != manifest.get("config_sha256"):
        problems.append("checkpoint.pt was made with another configuration than the run's manifest")
    stored = _stored_predictions(run_dir) if compare else {}
    for document in sample:
        text = document["text"]
        if hashlib.sha256(text.encode("utf-8")).hexdigest() != document["sha256"]:
            problems.append(f"{document['id']}: sample text does not match its recorded SHA-256")
            continue
        cls, score = model.predict_one(classifier, text, int(state["features"]))
        result = {"id": document["id"], "category": state["categories"][cls], "score": round(score, 6)}
        report["sample"].append(result)
        if compare:
            _compare(result, stored.get(document["id"]), problems)
    report["ok"] = not problems
    return report


def _stored_predictions(run_dir: Path) -> dict:
    stored = {}
    path = run_dir / "predictions.jsonl"
    if path.is_file():
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                record = json.loads(line)
                stored[record["id"]] = record
            except (ValueError, KeyError, TypeError):
                continue
    return stored


def _compare(result: dict, stored: dict | None, problems: list[str]) -> None:
    if stored is None:
        problems.append(f"{result['id']}: no stored prediction to compare with")
    elif stored.get("category") != result["category"]:
        problems.append(f"{result['id']}: reloaded model says {result['category']}, predictions.jsonl says {stored.get('category')}")
    elif not isinstance(stored.get("score"), (int, float)) or abs(stored["score"] - result["score"]) > SCORE_TOLERANCE:
        problems.append(f"{result['id']}: reloaded score {result['score']} differs from the stored {stored.get('score')}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="reload", description=__doc__.split("\n")[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--json", action="store_true", help="print the report as JSON on stdout")
    parser.add_argument("--no-compare", action="store_true", help="only reload and predict the sample")
    args = parser.parse_args(argv)
    report = reload_run(args.run_dir, compare=not args.no_compare)
    if args.json:
        print(json.dumps(report))
    else:
        for problem in report["problems"]:
            print(f"reload: {problem}", file=sys.stderr)
        print(f"reload: {'ok' if report['ok'] else 'FAILED'}: {len(report['sample'])} sample documents reproduced", file=sys.stderr)
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
