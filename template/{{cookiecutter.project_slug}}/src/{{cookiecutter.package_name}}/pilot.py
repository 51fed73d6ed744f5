"""The pilot: read the immutable input, one training update, a checkpoint, a prediction each.

    python -m {{ cookiecutter.package_name }}.pilot --config config/pilot.json [--run-id ID]

Writes runs/<id>/: manifest.json, predictions.jsonl, rejections.jsonl, summary.json and
checkpoint.pt. Exit codes are listed in errors.py; 0 only when every input ID is
accounted for exactly once and the rejections are the planned ones.
"""

from __future__ import annotations

import argparse
import platform
import subprocess
import sys
import time
from pathlib import Path

from .config import PilotConfig, load_config, project_root
from .errors import AccountingError, PilotError
from .inputs import Document, load_documents, manifest_sha256
from .runstore import append_jsonl, create_run_dir, new_run_id, save_checkpoint, utc_now, write_json


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    try:
        config = load_config(args.config)
        documents = load_documents(config)
        run_dir = create_run_dir(config.runs_dir, args.run_id or new_run_id())
        summary = run(config, documents, run_dir, argv if argv is not None else sys.argv[1:])
    except PilotError as error:
        print(f"pilot: error: {error}", file=sys.stderr)
        return error.exit_code
    print(
        f"pilot: run {run_dir.name}: {summary['accepted']} accepted, {summary['rejected']} rejected "
        f"of {summary['inputs']} inputs -> {run_dir}",
        file=sys.stderr,
    )
    return 0


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="pilot", description=__doc__.split("\n")[0])
    parser.add_argument("--config", type=Path, default=Path("config/pilot.json"), help="parameter file (default: config/pilot.json)")
    parser.add_argument("--run-id", help="ID of this trial (default: a new unique, sortable one)")
    return parser.parse_args(argv)


def run(config: PilotConfig, documents: list[Document], run_dir: Path, argv: list[str]) -> dict:
    import torch

    from . import model as m

    started = time.time()
    manifest = _run_manifest(config, run_dir, argv, torch.__version__)
    write_json(run_dir / "manifest.json", manifest)

    accepted = [d for d in documents if d.accepted]
    for document in documents:
        if not document.accepted:
            append_jsonl(run_dir / "rejections.jsonl", {"id": document.id, "reason": document.reason})

    model_settings, training = config.section("model"), config.section("training")
    features = int(model_settings.get("features", 4096))
    m.seed_everything(int(model_settings.get("seed", 0)))
    classifier = m.Classifier(features, len(config.categories))
    optimizer, scheduler = m.make_training(classifier, training)
    x = m.featurize([d.text for d in accepted], features)

    labelled = [i for i, d in enumerate(accepted) if d.label in config.categories]
    labels = torch.tensor([config.categories.index(accepted[i].label) for i in labelled], dtype=torch.long)
    losses = m.train(classifier, optimizer, scheduler, x[labelled], labels, int(training.get("steps", 1))) if labelled else []

    save_checkpoint(
        run_dir / "checkpoint.pt",
        {
            "model": classifier.state_dict(),
            "optimizer": optimizer.state_dict(),
            "scheduler": scheduler.state_dict(),
            "rng": m.rng_states(),
            "progress": {"steps": len(losses), "losses": losses, "trained_ids": [accepted[i].id for i in labelled]},
            "categories": config.categories,
            "features": features,
            "config_sha256": config.sha256,
        },
    )

    classes, scores = m.predict(classifier, x)
    for document, cls, score in zip(accepted, classes, scores):
        append_jsonl(run_dir / "predictions.jsonl", {"id": document.id, "category": config.categories[cls], "score": round(score, 6)})
    (run_dir / "predictions.jsonl").touch()
    (run_dir / "rejections.jsonl").touch()

    summary = account(config, documents, run_dir)
    summary["losses"] = losses
    summary["seconds"] = round(time.time() - started, 3)
    write_json(run_dir / "summary.json", summary)
    write_json(run_dir / "manifest.json", manifest | {"finished": utc_now(), "status": summary["status"]})
    failed = [name for name, ok in summary["checks"].items() if not ok]
    if failed:
        raise AccountingError(f"run {run_dir.name} does not account for its inputs: {', '.join(failed)} failed.", f"See {run_dir / 'summary.json'}.")
    return summary


def account(config: PilotConfig, documents: list[Document], run_dir: Path) -> dict:
    """Count what the run wrote (not what it meant to write) against the input manifest."""
    predicted = _ids(run_dir / "predictions.jsonl")
    rejected = _ids(run_dir / "rejections.jsonl")
    inputs = [d.id for d in documents]
    written = predicted + rejected
    planned = sorted(d.id for d in documents if d.expect == "reject")
    checks = {
        "counts_add_up": len(predicted) + len(rejected) == len(inputs),
        "each_input_once": sorted(written) == sorted(inputs),
        "no_invented_ids": set(written) <= set(inputs),
        "rejections_as_planned": sorted(rejected) == planned and len(planned) == config.expected_rejections,
    }
    return {
        "status": "complete" if all(checks.values()) else "failed",
        "inputs": len(inputs),
        "accepted": len(predicted),
        "rejected": len(rejected),
        "accepted_ids": sorted(predicted),
        "rejected_ids": sorted(rejected),
        "planned_rejections": planned,
        "checks": checks,
    }


def _ids(path: Path) -> list[str]:
    import json

    if not path.exists():
        return []
    return [json.loads(line)["id"] for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _run_manifest(config: PilotConfig, run_dir: Path, argv: list[str], torch_version: str) -> dict:
    return {
        "run_id": run_dir.name,
        "status": "running",
        "started": utc_now(),
        "command": [sys.executable, "-m", __spec__.name if __spec__ else "pilot", *argv],
        "config_path": str(config.path.relative_to(config.root)) if config.path.is_relative_to(config.root) else config.path.name,
        "config": config.raw,
        "config_sha256": config.sha256,
        "input_manifest": str(config.manifest.relative_to(config.root)),
        "input_manifest_sha256": manifest_sha256(config),
        "code_revision": _git_revision(project_root()),
        "environment": {
            "python": platform.python_version(),
            "executable": sys.executable,
            "torch": torch_version,
            "platform": platform.platform(),
            "host": platform.node(),
        },
    }


def _git_revision(root: Path) -> str | None:
    try:
        result = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return result.stdout.strip() or None if result.returncode == 0 else None


if __name__ == "__main__":
    sys.exit(main())
