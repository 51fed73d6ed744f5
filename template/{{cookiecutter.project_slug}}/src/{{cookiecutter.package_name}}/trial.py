"""One trial from start (or resume) to its summary: rejections, training or the saved
checkpoint, the stop rules, then one prediction line per document.

Every result line is appended whole and fsync'ed, so a kill at any point leaves a run
that `--resume` completes: the partial last line (if any) is dropped and recorded, the
documents already written are skipped, and a saved checkpoint is reloaded instead of
training again. The final predictions, rejections and summary equal an uninterrupted
run's (timings aside).
"""

from __future__ import annotations

import hashlib
import math
import os
import json
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

from . import faults, provenance
from .config import PilotConfig
from .errors import AccountingError, InputError, RunExistsError, StoppedError
from .inputs import Document, load_documents, manifest_sha256
from .runstore import append_jsonl, append_line, complete_lines, drop_partial_line, encode_line, read_manifest, save_checkpoint, utc_now, write_bytes, write_json
from .stoprules import StopRules, check_set_ids

RESULT_FILES = ("predictions.jsonl", "rejections.jsonl")
SAMPLE_SIZE = 3


class Trial:
    def __init__(self, config: PilotConfig, rules: StopRules, run_dir: Path, manifest: dict) -> None:
        self.config, self.rules, self.run_dir, self.manifest = config, rules, run_dir, manifest
        self.documents: list[Document] = []
        self.losses: list[float] = []
        self.quality: dict | None = None
        self.clock = time.time()

    # -- opening -----------------------------------------------------------------
    @classmethod
    def start(cls, config: PilotConfig, rules: StopRules, run_dir: Path, documents: list[Document], argv: list[str]) -> "Trial":
        trial = cls(config, rules, run_dir, provenance.new_manifest(config, run_dir.name, argv))
        trial.documents = documents
        write_bytes(run_dir / "inputs.json", config.manifest.read_bytes())
        provenance.copy_code(run_dir)
        trial.manifest["attempts"].append({"kind": "start", "started": utc_now()})
        trial._save_manifest()
        faults.at("after-manifest")
        return trial

    @classmethod
    def resume(cls, config: PilotConfig, rules: StopRules, run_dir: Path, argv: list[str]) -> "Trial":
        manifest = read_manifest(run_dir)
        refuse_changes(config, run_dir, manifest)
        trial = cls(config, rules, run_dir, manifest)
        _close_killed_attempt(manifest, run_dir)
        dropped = {name: n for name in RESULT_FILES if (n := drop_partial_line(run_dir / name))}
        done = sum(len(complete_lines(run_dir / name)) for name in RESULT_FILES)
        manifest["attempts"].append({"kind": "resume", "started": utc_now(), "command": ["python", "-m", manifest["command"][2], *argv], "lines_kept": done, "partial_line_bytes_dropped": dropped})
        manifest["status"] = "running"
        trial._save_manifest()
        try:
            trial.documents = load_documents(config)
        except InputError as error:
            if not rules.essential_input_missing:
                raise
            trial.documents = _recorded_documents(run_dir)
            reason = error.message.replace(f"{config.root}{os.sep}", "")  # no machine path in the evidence
            trial._stop(StoppedError("essential_input_missing", reason, "resume: reading the input"))
        return trial

    # -- the trial ------------------------------------------------------------------
    def run(self) -> dict:
        try:
            return self._run()
        except StoppedError as error:
            self._stop(error)

    def _run(self) -> dict:
        from . import model as m

        written = self._written_ids()
        count = len(written)
        for document in self.documents:
            if not document.accepted and document.id not in written:
                append_jsonl(self.run_dir / "rejections.jsonl", {"id": document.id, "reason": document.reason})
                count += 1
                faults.after_items(count)
        accepted = [d for d in self.documents if d.accepted]
        features = int(self.config.section("model").get("features", 4096))
        classifier = self._trained_model(accepted, features)
        self._check_quality(classifier, features)
        self._check_reload(classifier, accepted, features)

        path = self.run_dir / "predictions.jsonl"
        for document in accepted:
            if document.id in written:
                continue
            self._check_input(document)
            cls, score = m.predict_one(classifier, document.text, features)
            line = encode_line({"id": document.id, "category": self.config.categories[cls], "score": round(score, 6)})
            faults.partial_line(count, path, line)
            append_line(path, line)
            count += 1
            faults.after_items(count)
        return self._finish()

    def _trained_model(self, accepted: list[Document], features: int):
        from . import model as m

        checkpoint = self.run_dir / "checkpoint.pt"
        training = self.config.section("training")
        if checkpoint.exists():  # saved atomically: whole or absent
            try:
                state, classifier, _, _ = m.load_checkpoint(checkpoint, training, with_optimizer=False)  # training is done
            except Exception as error:
                raise StoppedError("checkpoint_not_reloadable", f"checkpoint.pt of the interrupted run does not reload: {type(error).__name__}: {error}", "resume: loading the checkpoint") from None
            self.losses = list(state["progress"]["losses"])
            return classifier
        import torch

        m.seed_everything(int(self.config.section("model").get("seed", 0)))
        classifier = m.Classifier(features, len(self.config.categories))
        optimizer, scheduler = m.make_training(classifier, training)
        labelled = [d for d in accepted if d.label in self.config.categories]
        if labelled:
            x = m.featurize([d.text for d in labelled], features)
            y = torch.tensor([self.config.categories.index(d.label) for d in labelled], dtype=torch.long)
            m.train(classifier, optimizer, scheduler, x, y, int(training.get("steps", 1)), on_step=self._on_step)
        faults.at("after-training")
        save_checkpoint(
            checkpoint,
            {
                "model": classifier.state_dict(),
                "optimizer": optimizer.state_dict(),
                "scheduler": scheduler.state_dict(),
                "rng": m.rng_states(),
                "progress": {"steps": len(self.losses), "losses": self.losses, "trained_ids": [d.id for d in labelled]},
                "categories": self.config.categories,
                "features": features,
                "config_sha256": self.config.sha256,
            },
        )
        faults.corrupt_checkpoint(checkpoint)
        faults.at("after-checkpoint")
        return classifier

    def _on_step(self, step: int, loss: float) -> None:
        self.losses.append(loss if math.isfinite(loss) else str(loss))
        self.rules.check_loss(step, loss)

    def _check_quality(self, classifier, features: int) -> None:
        if self.rules.min_accuracy is None:
            return
        from . import model as m

        by_id = {d.id: d for d in self.documents}
        ids = check_set_ids(self.rules, self.documents, self.config.categories)
        classes = m.predict(classifier, m.featurize([by_id[i].text for i in ids], features))[0] if ids else []
        correct = sum(self.config.categories[c] == by_id[i].label for i, c in zip(ids, classes))
        self.quality = {"check_set": ids, "correct": correct, "accuracy": round(correct / len(ids), 6) if ids else None, "min_accuracy": self.rules.min_accuracy}
        self.rules.check_quality(correct, len(ids))

    def _check_reload(self, classifier, accepted: list[Document], features: int) -> None:
        """Reload the checkpoint in a fresh interpreter; it must predict the sample as we do."""
        from . import model as m

        sample_path = self.run_dir / "reload-sample.json"
        if not sample_path.exists():
            picks = sorted({0, len(accepted) // 2, len(accepted) - 1}) if accepted else []
            documents = [{"id": accepted[i].id, "sha256": hashlib.sha256(accepted[i].text.encode("utf-8")).hexdigest(), "text": accepted[i].text} for i in picks[:SAMPLE_SIZE]]
            write_json(sample_path, {"documents": documents})
        if not self.rules.checkpoint_not_reloadable:
            return
        digest = hashlib.sha256((self.run_dir / "checkpoint.pt").read_bytes()).hexdigest()
        if (self.manifest.get("checkpoint_reload") or {}).get("sha256") == digest:
            return  # this very checkpoint already reloaded before the interruption
        started = time.time()
        report = _reload_in_fresh_process(self.run_dir)
        expected = []
        by_id = {d.id: d for d in accepted}
        for entry in report.get("sample", []):
            cls, score = m.predict_one(classifier, by_id[entry["id"]].text, features) if entry["id"] in by_id else (None, None)
            expected.append({"id": entry["id"], "category": self.config.categories[cls] if cls is not None else None, "score": round(score, 6) if score is not None else None})
        problems = list(report.get("problems", []))
        if not problems and expected != report.get("sample"):
            problems.append(f"the reloaded model predicts {report.get('sample')}, the trained one {expected}")
        if problems:
            raise StoppedError("checkpoint_not_reloadable", "; ".join(problems), "checkpoint reload check")
        self.manifest["checkpoint_reload"] = {"sha256": digest, "seconds": round(time.time() - started, 3), "sample": [e["id"] for e in expected]}
        self._save_manifest()

    def _check_input(self, document: Document) -> None:
        if self.rules.essential_input_missing and not (self.config.data_dir / document.file).is_file():
            raise StoppedError("essential_input_missing", f"document {document.id} ({self.config.raw['data_dir']}/{document.file}) vanished during the run.", f"predicting {document.id}")

    # -- closing --------------------------------------------------------------------
    def _finish(self) -> dict:
        for name in RESULT_FILES:
            (self.run_dir / name).touch()
        summary = self._summary()
        write_json(self.run_dir / "summary.json", summary)
        self._close(summary["status"])
        failed = [name for name, ok in summary["checks"].items() if not ok]
        if failed:
            raise AccountingError(f"run {self.run_dir.name} does not account for its inputs: {', '.join(failed)} failed.", f"See runs/{self.run_dir.name}/summary.json.")
        return summary

    def _stop(self, error: StoppedError) -> None:
        summary = self._summary()
        summary["status"] = "stopped"
        summary["stopped"] = {"rule": error.rule, "reason": error.reason, "at": error.at, "time": utc_now()}
        write_json(self.run_dir / "summary.json", summary)
        self._close("stopped")
        raise error

    def _summary(self) -> dict:
        summary = account(self.config, self.documents, self.run_dir)
        summary["losses"] = self.losses
        summary["quality"] = self.quality
        summary["stopped"] = None
        summary["seconds"] = round(sum(a.get("seconds", 0) for a in self.manifest["attempts"][:-1]) + time.time() - self.clock, 3)
        return summary

    def _close(self, status: str) -> None:
        attempt = self.manifest["attempts"][-1]
        attempt["finished"] = utc_now()
        attempt["seconds"] = round(time.time() - self.clock, 3)
        self.manifest["status"] = status
        self.manifest["finished"] = attempt["finished"]
        self._save_manifest()

    def _save_manifest(self) -> None:
        write_json(self.run_dir / "manifest.json", self.manifest)

    def _written_ids(self) -> set[str]:
        return {record["id"] for name in RESULT_FILES for record in complete_lines(self.run_dir / name)}


def account(config: PilotConfig, documents: list[Document], run_dir: Path) -> dict:
    """Count what the run wrote (not what it meant to write) against the input manifest."""
    predicted = [r["id"] for r in complete_lines(run_dir / "predictions.jsonl")]
    rejected = [r["id"] for r in complete_lines(run_dir / "rejections.jsonl")]
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


def refuse_changes(config: PilotConfig, run_dir: Path, manifest: dict, check_status: bool = True) -> None:
    name = run_dir.name
    if manifest.get("config_sha256") != config.sha256:
        raise RunExistsError(
            f"run {name} was made with config hash {str(manifest.get('config_sha256'))[:12]}…; {config.path.name} now hashes {config.sha256[:12]}….",
            "A changed configuration gets a new run ID: start a new run without --resume, or restore the run's configuration (recorded in its manifest.json).",
        )
    if manifest.get("input_manifest_sha256") != manifest_sha256(config):
        raise RunExistsError(f"run {name} was made on another input (its input manifest hash differs from {config.raw['manifest']}).", "Resume on the input the run started with, or start a new run.")
    status = manifest.get("status")
    if status in ("stopped", "failed") and check_status:
        raise RunExistsError(f"run {name} is {status}; its evidence and reason are kept as they are.", "Fix the cause, then start a new run (a new ID).")


def _recorded_documents(run_dir: Path) -> list[Document]:
    """The input as the run recorded it (inputs.json), for accounting when the input is gone."""
    entries = json.loads((run_dir / "inputs.json").read_text(encoding="utf-8"))["documents"]
    return [Document(id=e["id"], file=e["file"], label=e.get("label"), expect=e.get("expect", "accept")) for e in entries]


def _close_killed_attempt(manifest: dict, run_dir: Path) -> None:
    """The killed process never wrote its end: estimate it from the run's newest file."""
    attempt = manifest["attempts"][-1] if manifest.get("attempts") else None
    if attempt is None or "seconds" in attempt:
        return
    newest = max(p.stat().st_mtime for p in run_dir.rglob("*") if p.is_file())
    started = datetime.fromisoformat(attempt["started"]).timestamp()
    attempt["seconds"] = round(max(0.0, newest - started), 3)
    attempt["finished"] = "killed (estimated from the newest file)"


def _reload_in_fresh_process(run_dir: Path) -> dict:
    script = run_dir / "reload.py"
    try:
        result = subprocess.run([sys.executable, "-B", str(script), str(run_dir), "--json", "--no-compare"], capture_output=True, text=True, timeout=600)
    except (OSError, subprocess.TimeoutExpired) as error:
        return {"problems": [f"the reload process could not run: {error}"]}
    try:
        return json.loads(result.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"problems": [f"the reload process failed (exit {result.returncode}): {result.stderr.strip()[-500:]}"]}
