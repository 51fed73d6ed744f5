"""One trial from start (or resume) to its summary: rejections, training or the saved
checkpoint, the stop rules, then one prediction line per accepted document.

A kill at any point leaves a run that `--resume` completes: the partial last line (if
any) is dropped and recorded, the documents already written are skipped, and a saved
checkpoint is restored instead of training again. The final predictions, rejections and
summary equal an uninterrupted run's (timings aside).
"""

from __future__ import annotations

import hashlib
import json
import math
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

from . import record, store
from .config import PilotConfig
from .errors import AccountingError, PilotError, RunExistsError, StoppedError
from .inputs import Document, manifest_sha256
from .reload import CheckpointError, load
from .rules import StopRules

RESULT_FILES = ("predictions.jsonl", "rejections.jsonl")
RELOAD_CHECKED = 3  # documents the pilot's own reload check re-predicts; `bundler runs verify` re-predicts them all


class Trial:
    def __init__(self, config: PilotConfig, rules: StopRules, model, run_dir: Path, manifest: dict, documents: list[Document]) -> None:
        self.config, self.rules, self.model, self.run_dir, self.manifest = config, rules, model, run_dir, manifest
        self.documents = documents
        self.losses: list = []
        self.quality: dict | None = None
        self.clock = time.time()

    @classmethod
    def start(cls, config: PilotConfig, rules: StopRules, model, run_dir: Path, documents: list[Document], command: list[str]) -> Trial:
        trial = cls(config, rules, model, run_dir, record.new_manifest(config, run_dir.name, command), documents)
        manifest_bytes = config.manifest.read_bytes()
        store.write_atomic(run_dir / "inputs.json", lambda handle: handle.write(manifest_bytes))
        texts = [{"id": d.id, "sha256": d.sha256, "text": d.text} for d in documents if d.accepted]
        store.write_json(run_dir / record.TEXTS_FILE, {"documents": texts})
        record.copy_code(run_dir, model.__file__)
        trial.manifest["reload"]["model_source"] = record.model_source(config.root, model.__file__)
        trial.manifest["attempts"].append({"kind": "start", "started": store.utc_now()})
        trial._save_manifest()
        return trial

    @classmethod
    def resume(
        cls, config: PilotConfig, rules: StopRules, model, run_dir: Path, manifest: dict, documents: list[Document], command: list[str]
    ) -> Trial:
        _close_killed_attempt(manifest, run_dir)
        dropped = {name: n for name in RESULT_FILES if (n := store.drop_partial_line(run_dir / name))}
        done = sum(len(store.complete_lines(run_dir / name)) for name in RESULT_FILES)
        attempt = {
            "kind": "resume",
            "started": store.utc_now(),
            "command": command,
            "lines_kept": done,
            "partial_line_bytes_dropped": dropped,
        }
        manifest["attempts"].append(attempt)
        manifest["status"] = "running"
        trial = cls(config, rules, model, run_dir, manifest, documents)
        trial._save_manifest()
        return trial

    # -- the trial ------------------------------------------------------------------
    def run(self) -> dict:
        try:
            return self._run()
        except StoppedError as error:
            self._close_with(error, "stopped", {"rule": error.rule, "reason": error.reason, "at": error.at, "time": store.utc_now()})
        except AccountingError as error:
            self._close_with(error, "failed", None)

    def _run(self) -> dict:
        folder = self.config.raw["data_dir"]
        written = {r["id"] for name in RESULT_FILES for r in store.complete_lines(self.run_dir / name)}
        for document in self.documents:
            if not document.accepted and document.id not in written:
                store.append_line(self.run_dir / "rejections.jsonl", store.encode_line({"id": document.id, "reason": document.reason}))
        accepted = [d for d in self.documents if d.accepted]
        classifier = self._trained(accepted)
        self._check_quality(classifier)
        self._check_reload(classifier, accepted)
        for document in accepted:
            if document.id not in written:
                if self.rules.essential_input_missing and not (self.config.data_dir / document.file).is_file():
                    reason = f"document {document.id} ({folder}/{document.file}) vanished during the run."
                    raise StoppedError("essential_input_missing", reason, f"predicting {document.id}")
                line = store.encode_line({"id": document.id, **self._prediction(classifier, document)})
                store.append_line(self.run_dir / "predictions.jsonl", line)
        return self._finish()

    def _trained(self, accepted: list[Document]):
        checkpoint = self.run_dir / "checkpoint.pt"
        if checkpoint.exists():  # saved atomically: whole or absent
            try:
                state, classifier = load(checkpoint, self.model)
            except CheckpointError as error:
                raise StoppedError("checkpoint_not_reloadable", f"the interrupted run's {error}", "resume: loading it") from None
            self.losses = list(state["progress"]["losses"])
            return classifier
        categories = self.config.categories
        classifier = self.model.create(categories, self.config.parameters)
        labelled = [d for d in accepted if d.label in categories]
        if labelled:
            classifier.fit([d.text for d in labelled], [categories.index(d.label) for d in labelled], self._on_step)
        progress = {"steps": len(self.losses), "losses": self.losses, "trained_ids": [d.id for d in labelled]}
        state = {"model": classifier.state(), "progress": progress, "categories": categories, "config_sha256": self.config.sha256}
        store.save_checkpoint(checkpoint, state)
        return classifier

    def _on_step(self, step: int, loss: float) -> None:
        self.losses.append(loss if math.isfinite(loss) else str(loss))
        self.rules.check_loss(step, loss)

    def _prediction(self, classifier, document: Document) -> dict:
        index, score = classifier.predict(document.text)
        if not (isinstance(index, int) and 0 <= index < len(self.config.categories) and isinstance(score, float) and 0 <= score <= 1):
            raise AccountingError(
                f"model.predict gave ({index!r}, {score!r}) for {document.id}: not a category index and a score in [0, 1].",
                "See the contract in evidence/__init__.py (Model.predict).",
            )
        return {"category": self.config.categories[index], "score": round(score, 6)}

    def _check_quality(self, classifier) -> None:
        if self.rules.min_accuracy is None:
            return
        by_id = {d.id: d for d in self.documents}
        ids = self.rules.check_set_ids(self.documents, self.config.categories)
        correct = sum(self._prediction(classifier, by_id[i])["category"] == by_id[i].label for i in ids)
        accuracy = round(correct / len(ids), 6) if ids else None
        self.quality = {"check_set": ids, "correct": correct, "accuracy": accuracy, "min_accuracy": self.rules.min_accuracy}
        self.rules.check_quality(correct, len(ids))

    def _check_reload(self, classifier, accepted: list[Document]) -> None:
        """Reload the checkpoint in a fresh interpreter; it must predict as the trained model does."""
        if not self.rules.checkpoint_not_reloadable:
            return
        digest = hashlib.sha256((self.run_dir / "checkpoint.pt").read_bytes()).hexdigest()
        if (self.manifest.get("checkpoint_reload") or {}).get("sha256") == digest:
            return  # this very checkpoint already reloaded before the interruption
        started = time.time()
        report = _reload_in_fresh_process(self.run_dir)
        problems = list(report.get("problems", []))
        by_id = {d.id: d for d in accepted}
        expected = [
            {"id": e["id"], **self._prediction(classifier, by_id[e["id"]])} for e in report.get("predicted", []) if e["id"] in by_id
        ]
        if not problems and expected != report.get("predicted"):
            problems.append(f"the reloaded model predicts {report.get('predicted')}, the trained one {expected}")
        if problems:
            raise StoppedError("checkpoint_not_reloadable", "; ".join(problems), "checkpoint reload check")
        self.manifest["checkpoint_reload"] = {
            "sha256": digest,
            "seconds": round(time.time() - started, 3),
            "predicted": [e["id"] for e in expected],
        }
        self._save_manifest()

    # -- closing --------------------------------------------------------------------
    def _finish(self) -> dict:
        for name in RESULT_FILES:
            (self.run_dir / name).touch()
        summary = self._summary()
        store.write_json(self.run_dir / "summary.json", summary)
        self._close(summary["status"])
        failed = [name for name, ok in summary["checks"].items() if not ok]
        if failed:
            raise AccountingError(
                f"run {self.run_dir.name} does not account for its inputs: {', '.join(failed)} failed.",
                f"See runs/{self.run_dir.name}/summary.json.",
            )
        return summary

    def _close_with(self, error: PilotError, status: str, stopped: dict | None) -> None:
        if self.manifest["status"] == "running":  # _finish closes a run whose accounting failed itself
            summary = {**self._summary(), "status": status, "stopped": stopped}
            store.write_json(self.run_dir / "summary.json", summary)
            self._close(status)
        raise error

    def _summary(self) -> dict:
        summary = account(self.config, self.documents, self.run_dir)
        seconds = sum(a.get("seconds", 0) for a in self.manifest["attempts"][:-1]) + time.time() - self.clock
        return {**summary, "losses": self.losses, "quality": self.quality, "stopped": None, "seconds": round(seconds, 3)}

    def _close(self, status: str) -> None:
        attempt = self.manifest["attempts"][-1]
        attempt["finished"] = store.utc_now()
        attempt["seconds"] = round(time.time() - self.clock, 3)
        self.manifest["status"] = status
        self.manifest["finished"] = attempt["finished"]
        self.manifest["sha256"] = record.file_hashes(self.run_dir)
        self._save_manifest()

    def _save_manifest(self) -> None:
        store.write_json(self.run_dir / "manifest.json", self.manifest)


def account(config: PilotConfig, documents: list[Document], run_dir: Path) -> dict:
    """Count what the run wrote (not what it meant to write) against the input manifest."""
    predicted = [r["id"] for r in store.complete_lines(run_dir / "predictions.jsonl")]
    rejected = [r["id"] for r in store.complete_lines(run_dir / "rejections.jsonl")]
    inputs = [d.id for d in documents]
    written = predicted + rejected
    planned = sorted(d.id for d in documents if d.expect == "reject")
    checks = {
        "counts_add_up": len(predicted) + len(rejected) == len(inputs),
        "each_input_once": sorted(written) == sorted(inputs),
        "no_invented_ids": set(written) <= set(inputs),
        "rejections_as_planned": sorted(rejected) == planned and len(planned) == config.raw["expected_rejections"],
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


def refuse_changes(config: PilotConfig, run_dir: Path, manifest: dict, model_file: str | None = None) -> None:
    """A run continues only on the configuration, input and code it started with, and only if it did not stop."""
    name = run_dir.name
    sources = (("model.py", model_file), ("reload.py", str(Path(__file__).with_name("reload.py"))))
    for copy, source in sources:
        if source and (run_dir / copy).is_file() and _sha256(Path(source)) != _sha256(run_dir / copy):
            raise RunExistsError(
                f"run {name} was made with another {Path(source).name} than the project's {source}: "
                "a resume would mix the predictions of two versions of the code.",
                "Restore the code the run started with (its copy is in the run folder), or start a new run (a new ID).",
            )
    if manifest.get("config_sha256") != config.sha256:
        recorded, now = str(manifest.get("config_sha256"))[:12], config.sha256[:12]
        raise RunExistsError(
            f"run {name} was made with config hash {recorded}…; {config.path.name} now hashes {now}….",
            "A changed configuration gets a new run ID: start a new run without --resume, "
            "or restore the run's configuration (recorded in its manifest.json).",
        )
    if manifest.get("input_manifest_sha256") != manifest_sha256(config):
        raise RunExistsError(
            f"run {name} was made on another input (its input manifest hash differs from {config.raw['manifest']}).",
            "Resume on the input the run started with, or start a new run.",
        )
    if manifest.get("status") in ("stopped", "failed"):
        raise RunExistsError(
            f"run {name} is {manifest['status']}; its evidence and reason are kept as they are.",
            "Fix the cause, then start a new run (a new ID).",
        )


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _close_killed_attempt(manifest: dict, run_dir: Path) -> None:
    """The killed process never wrote its end: estimate it from the run's newest file."""
    attempt = manifest["attempts"][-1]
    if "seconds" in attempt:
        return
    newest = max(p.stat().st_mtime for p in run_dir.rglob("*") if p.is_file() and p.name != store.LOCK_FILE)  # the resume's own lock is new
    attempt["seconds"] = round(max(0.0, newest - datetime.fromisoformat(attempt["started"]).timestamp()), 3)
    attempt["finished"] = "killed (estimated from the newest file)"


def _reload_in_fresh_process(run_dir: Path) -> dict:
    argv = [sys.executable, "-B", str(run_dir / "reload.py"), str(run_dir), "--json", "--no-compare", "--limit", str(RELOAD_CHECKED)]
    try:
        result = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    except (OSError, subprocess.TimeoutExpired) as error:
        return {"problems": [f"the reload process could not run: {error}"]}
    try:
        return json.loads(result.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"problems": [f"the reload process failed (exit {result.returncode}): {result.stderr.strip()[-500:]}"]}
