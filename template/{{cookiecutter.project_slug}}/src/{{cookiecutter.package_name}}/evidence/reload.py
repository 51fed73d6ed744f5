"""Reload a run's checkpoint in a fresh process and re-predict every accepted document.

    python runs/<id>/reload.py runs/<id> [--json] [--no-compare] [--limit N]

Stand-alone (torch and the standard library): every run carries a copy of this file and
of model.py, so a copy of the run folder reloads on any machine with torch, without the
project. ``torch.load(weights_only=True)``: no pickled code runs. Each text of texts.json
must match the SHA-256 the input recorded (inputs.json); each is predicted one at a time
and compared with predictions.jsonl, and every stored prediction must be reproduced.
Exit 0 when everything reloads and matches, 1 otherwise.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

SCORE_TOLERANCE = 1e-5
LISTED = 5


class CheckpointError(Exception):
    """A checkpoint that does not load; the message is ours, never a suggestion to unpickle it unsafely."""


def load(path: Path, model) -> tuple[dict, object]:
    """The checkpoint's state and the model ``model.restore`` rebuilds from it."""
    import torch

    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as error:  # any failure to load is the finding itself
        detail = str(error).split("WeightsUnpickler error:")[-1].strip().splitlines()
        reason = detail[0] if detail and "weights_only" not in detail[0] else "not a weights-only checkpoint"
        raise CheckpointError(f"{path.name} does not load as a weights-only checkpoint: {type(error).__name__}: {reason}") from None
    try:
        return state, model.restore(state["model"])
    except Exception as error:
        raise CheckpointError(f"{path.name} loads, but the model cannot be restored from it: {type(error).__name__}: {error}") from None


def reload_run(run_dir: Path, model, compare: bool = True, limit: int | None = None) -> dict:
    run_dir = Path(run_dir)
    report = {"ok": False, "predicted": [], "problems": []}
    problems = report["problems"]
    try:
        manifest = _read(run_dir / "manifest.json")
        texts = [(str(entry["id"]), str(entry["text"])) for entry in _read(run_dir / "texts.json")["documents"][:limit]]
        recorded = {entry["id"]: entry["sha256"] for entry in _read(run_dir / "inputs.json")["documents"]}
        state, classifier = load(run_dir / "checkpoint.pt", model)
    except (OSError, ValueError, KeyError, TypeError, CheckpointError) as error:
        problems.append(str(error) if isinstance(error, CheckpointError) else f"cannot read the run: {type(error).__name__}: {error}")
        return report
    if state.get("config_sha256") != manifest.get("config_sha256"):
        problems.append("checkpoint.pt was made with another configuration than the run's manifest")
    for doc_id, text in texts:
        if hashlib.sha256(text.encode("utf-8")).hexdigest() != recorded.get(doc_id):
            problems.append(f"{doc_id}: its text in texts.json is not the input's (SHA-256 differs from inputs.json)")
            continue
        index, score = classifier.predict(text)
        report["predicted"].append({"id": doc_id, "category": state["categories"][index], "score": round(score, 6)})
    if compare:
        problems += _compare(report["predicted"], _stored(run_dir / "predictions.jsonl"))
    report["ok"] = not problems
    return report


def _compare(predicted: list[dict], stored: dict) -> list[str]:
    found = []
    for result in predicted:
        mine = stored.pop(result["id"], None)
        if mine is None:
            found.append(f"{result['id']}: no stored prediction")
        elif mine.get("category") != result["category"]:
            found.append(f"{result['id']}: reloaded model says {result['category']}, predictions.jsonl says {mine.get('category')}")
        elif not isinstance(mine.get("score"), (int, float)) or not abs(mine["score"] - result["score"]) <= SCORE_TOLERANCE:
            found.append(f"{result['id']}: reloaded score {result['score']} differs from the stored {mine.get('score')}")
    found += [f"{i}: stored prediction not re-predicted (no text in texts.json)" for i in stored]
    return found[:LISTED] + ([f"and {len(found) - LISTED} more"] if len(found) > LISTED else [])


def _read(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def _stored(path: Path) -> dict:
    stored = {}
    for line in path.read_text(encoding="utf-8").splitlines() if path.is_file() else []:
        try:
            record = json.loads(line)
            stored[record["id"]] = record
        except (ValueError, KeyError, TypeError):
            continue
    return stored


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="reload", description=__doc__.split("\n")[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--json", action="store_true", help="print the report as JSON on stdout")
    parser.add_argument("--no-compare", action="store_true", help="only reload and predict")
    parser.add_argument("--limit", type=int, help="predict only the first N documents of texts.json")
    args = parser.parse_args(argv)
    import model  # the run's own copy, beside this file

    report = reload_run(args.run_dir, model, compare=not args.no_compare, limit=args.limit)
    if args.json:
        print(json.dumps(report))
    else:
        for problem in report["problems"]:
            print(f"reload: {problem}", file=sys.stderr)
        print(f"reload: {'ok' if report['ok'] else 'FAILED'}: {len(report['predicted'])} documents re-predicted", file=sys.stderr)
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
