"""`bundler runs verify RUN_DIR`: prove that a run folder is an accepted delivery.

Every check runs and every problem is listed (not only the first); nothing in the run
folder is modified. The run layout is the one the generated project's pilot writes:
manifest.json, inputs.json (the input manifest it ran on), predictions.jsonl,
rejections.jsonl, summary.json, checkpoint.pt, texts.json (the text of every accepted document),
model.py and reload.py (the model and the reload script, so the checkpoint reloads and
re-predicts every accepted document without the project).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from bundler.errors import ProjectFileError, UsageError
from bundler.evidence.checksums import CHECKSUMS, compare_checksums
from bundler.evidence.entrycheck import entry_verification, read_entry_manifest
from bundler.evidence.outcome import Check, Verification, named, verdict
from bundler.evidence.reload import reload_in_fresh_process
from bundler.evidence.runsfolder import project_of
from bundler.fsutil import parse_json, read_json, sha256_file
from bundler.machinepaths import machine_paths

RUN_FILES = ("manifest.json", "inputs.json", "predictions.jsonl", "rejections.jsonl", "summary.json", "checkpoint.pt")
OUTPUT_FILES = ("manifest.json", "summary.json", "predictions.jsonl", "rejections.jsonl", "decisions.jsonl")
MANIFEST_FIELDS = ("run_id", "config", "config_sha256", "input_manifest_sha256", "code_revision", "environment", "reload")
ENVIRONMENT_FIELDS = ("python", "torch", "lock_sha256", "image_digest")


@dataclass
class JsonLines:
    """A JSON Lines file read once: its records and what is wrong with it."""

    records: list[dict] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    exists: bool = False
    empty: bool = False


class RunData:
    """Everything the checks read, loaded once (a 10,000-document run reads in milliseconds)."""

    def __init__(self, run_dir: Path, project: Path | None = None) -> None:
        self.run_dir, self.project = run_dir, project
        self.manifest, self.manifest_problem = _read_json(run_dir / "manifest.json")
        self.summary, self.summary_problem = _read_json(run_dir / "summary.json")
        self.inputs, self.inputs_problem = _read_json(run_dir / "inputs.json")
        self.predictions = _read_jsonl(run_dir / "predictions.jsonl")
        self.rejections = _read_jsonl(run_dir / "rejections.jsonl")

    @property
    def ended(self) -> str:
        if not isinstance(self.summary, dict):
            return "incomplete"
        return "stopped" if self.summary.get("stopped") else str(self.summary.get("status", "failed"))

    @property
    def input_ids(self) -> list[str] | None:
        try:
            return [str(entry["id"]) for entry in self.inputs["documents"]]
        except (TypeError, KeyError):
            return None

    @property
    def categories(self) -> list[str] | None:
        try:
            categories = self.manifest["config"]["categories"]
            return list(categories) if isinstance(categories, list) else None
        except (TypeError, KeyError):
            return None


def verify_run(
    run_dir: Path, *, reload: bool = True, python: str | None = None, reload_failed: bool = True, project: Path | None = None
) -> Verification:
    """Run every check on ``run_dir``; with ``reload`` the checkpoint reloads in a fresh process with the code
    of ``project`` (default: the project the run lies in); without ``reload_failed``, only when every other
    check passed: the verdict is the same, sooner."""
    run_dir = Path(run_dir)
    if not run_dir.exists():
        raise UsageError(f"run folder {run_dir} does not exist.", hint="Pass a folder under runs/, e.g. runs/pilot-001.", path=run_dir)
    if not run_dir.is_dir():
        raise UsageError(f"{run_dir} is a file, not a run folder.", hint="Pass the folder runs/<id>/ itself.", path=run_dir)
    entry_manifest = read_entry_manifest(run_dir)
    if entry_manifest is not None:  # a run of `bundler run`: its own rules, nothing executed
        result = entry_verification(run_dir, entry_manifest, project or project_of(run_dir))
        result.checks.append(checksums_check(run_dir))
        return result
    result = Verification(run_dir)
    present = [name for name in RUN_FILES if (run_dir / name).exists()]
    if not present:
        result.checks.append(Check("run_folder", False, f"{run_dir} holds none of {', '.join(RUN_FILES)}: it is not a run folder."))
        return result
    result.checks.append(Check("run_folder", True, f"{len(present)} of {len(RUN_FILES)} run files present"))
    data = RunData(run_dir, project or project_of(run_dir))
    result.ended = data.ended
    for check in (
        check_manifest,
        check_files_complete,
        check_input_manifest,
        check_each_input_once,
        check_no_invented_ids,
        check_counts,
        check_categories,
        check_scores,
        check_rejection_reasons,
        check_machine_paths,
        check_run_status,
        check_recorded_hashes,
        check_checksums,
    ):
        result.checks.append(check(data))
    if reload and (reload_failed or result.accepted):
        started = time.perf_counter()
        result.checks.append(check_checkpoint_reload(data, python))
        result.reload_seconds = round(time.perf_counter() - started, 3)
    return result


# -- the checks ---------------------------------------------------------------------
def check_manifest(data: RunData) -> Check:
    name = "manifest"
    if data.manifest_problem:
        return Check(name, False, data.manifest_problem)
    manifest = data.manifest
    if not isinstance(manifest, dict):
        return Check(name, False, "manifest.json does not hold a JSON object")
    problems = [f"lacks {key}" for key in MANIFEST_FIELDS if key not in manifest]
    environment = manifest.get("environment")
    if isinstance(environment, dict):
        problems += [f"environment lacks {key}" for key in ENVIRONMENT_FIELDS if key not in environment]
    if isinstance(manifest.get("config"), dict) and "config_sha256" in manifest:
        actual = hashlib.sha256(json.dumps(manifest["config"], sort_keys=True, separators=(",", ":")).encode("utf-8")).hexdigest()
        if actual != manifest["config_sha256"]:
            problems.append(f"config_sha256 {str(manifest['config_sha256'])[:12]}… does not match the recorded config ({actual[:12]}…)")
    if "reload" in manifest and not (isinstance(manifest["reload"], dict) and manifest["reload"].get("command")):
        problems.append("reload instructions lack a command")
    problems += [f"names {named!r}, {why}" for named, why in _named_files(data.run_dir, manifest)]
    return verdict(name, problems, "parameters, hashes, code revision, environment and reload instructions recorded")


def _named_files(run_dir: Path, manifest: dict) -> list[tuple[str, str]]:
    """The files the manifest says the run holds (input copy, checkpoint, code, texts) that it does not hold."""
    reload = manifest.get("reload") if isinstance(manifest.get("reload"), dict) else {}
    code = reload.get("code") if isinstance(reload.get("code"), list) else [reload.get("code")]
    named = [manifest.get("input_copy"), reload.get("checkpoint"), reload.get("texts"), *code]
    wrong = []
    for name in (n for n in named if n is not None):
        if not isinstance(name, str) or PurePosixPath(name).is_absolute() or ".." in PurePosixPath(name).parts or "\\" in name:
            wrong.append((str(name), "which is not a file name inside the run folder"))
        elif not (run_dir / name).is_file():
            wrong.append((name, "which the run folder does not hold"))
    return wrong


def check_files_complete(data: RunData) -> Check:
    problems = []
    for name in RUN_FILES:
        path = data.run_dir / name
        if not path.exists():
            problems.append(f"{name} is missing")
        elif path.stat().st_size == 0 and name not in ("predictions.jsonl", "rejections.jsonl"):
            problems.append(f"{name} is empty")
    for problem in (data.manifest_problem, data.summary_problem, data.inputs_problem):
        if problem and "is missing" not in problem:
            problems.append(problem)
    for lines in (data.predictions, data.rejections):
        problems += lines.problems
    expected_accepted = _summary_count(data, "accepted")
    if data.predictions.exists and data.predictions.empty and expected_accepted:
        problems.append(f"predictions.jsonl is empty but summary.json counts {expected_accepted} accepted documents")
    return verdict("files_complete", problems, "every file present, non-empty, and parses to its last line")


def check_input_manifest(data: RunData) -> Check:
    path = data.run_dir / "inputs.json"
    if not path.is_file():
        return Check("input_manifest", False, "inputs.json (the input manifest the run used) is missing: the input IDs cannot be checked")
    recorded = (data.manifest or {}).get("input_manifest_sha256") if isinstance(data.manifest, dict) else None
    actual = hashlib.sha256(path.read_bytes()).hexdigest()
    if recorded != actual:
        return Check("input_manifest", False, f"inputs.json hashes {actual[:12]}…, the manifest records {str(recorded)[:12]}…")
    if data.input_ids is None:
        return Check("input_manifest", False, "inputs.json has no documents list")
    return Check("input_manifest", True, f"{len(data.input_ids)} inputs, hash matches the manifest")


def check_each_input_once(data: RunData) -> Check:
    if data.input_ids is None:
        return Check("each_input_once", False, "skipped: no readable input manifest")
    counts = Counter(_ids(data.predictions) + _ids(data.rejections))
    missing = [i for i in data.input_ids if counts[i] == 0]
    duplicated = [f"{i} ({counts[i]} times)" for i in data.input_ids if counts[i] > 1]
    problems = named("missing from predictions and rejections", missing) + named("written more than once", duplicated)
    return verdict("each_input_once", problems, f"each of the {len(data.input_ids)} inputs appears exactly once")


def check_no_invented_ids(data: RunData) -> Check:
    if data.input_ids is None:
        return Check("no_invented_ids", False, "skipped: no readable input manifest")
    known = set(data.input_ids)
    invented = sorted({i for i in _ids(data.predictions) + _ids(data.rejections) if i not in known})
    return verdict("no_invented_ids", named("not an input", invented), "every written ID is an input")


def check_counts(data: RunData) -> Check:
    if data.input_ids is None:
        return Check("counts_add_up", False, "skipped: no readable input manifest")
    accepted, rejected, inputs = len(data.predictions.records), len(data.rejections.records), len(data.input_ids)
    problems = []
    if accepted + rejected != inputs:
        problems.append(f"accepted {accepted} + rejected {rejected} = {accepted + rejected}, not the {inputs} inputs")
    for key, actual in (("accepted", accepted), ("rejected", rejected), ("inputs", inputs)):
        stated = data.summary.get(key) if isinstance(data.summary, dict) else None
        if stated is not None and type(stated) is not int:
            problems.append(f"summary.json: {key} is {stated!r}, not a whole number")
        elif stated is not None and stated != actual:
            problems.append(f"summary.json says {key} {stated}, the files hold {actual}")
    return verdict("counts_add_up", problems, f"accepted {accepted} + rejected {rejected} = {inputs} inputs")


def check_categories(data: RunData) -> Check:
    categories = data.categories
    if categories is None:
        return Check("categories_allowed", False, "skipped: the manifest records no categories")
    allowed = set(categories)
    wrong = [f"{r.get('id')}: {r.get('category')!r}" for r in data.predictions.records if r.get("category") not in allowed]
    return verdict("categories_allowed", named("category not allowed", wrong), f"every prediction is one of {', '.join(categories)}")


def check_scores(data: RunData) -> Check:
    bad = [
        f"{r.get('id')}: {r.get('score')!r}"
        for r in data.predictions.records
        if isinstance(r.get("score"), bool) or not isinstance(r.get("score"), (int, float)) or not 0 <= r["score"] <= 1
    ]
    return verdict("scores_valid", named("score not a number in [0, 1]", bad), "every score is a number in [0, 1]")


def check_rejection_reasons(data: RunData) -> Check:
    bare = [str(r.get("id")) for r in data.rejections.records if not (isinstance(r.get("reason"), str) and r["reason"].strip())]
    return verdict(
        "rejection_reasons", named("rejected without a reason", bare), f"{len(data.rejections.records)} rejections, each with its reason"
    )


def check_machine_paths(data: RunData) -> Check:
    findings = []
    for name in OUTPUT_FILES:
        path = data.run_dir / name
        if not path.is_file():
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        if not machine_paths(text):
            continue
        for number, line in enumerate(text.splitlines(), 1):
            found = machine_paths(line)
            if found:
                findings.append(f"{name}:{number} {found[0][1]!r}")
    return verdict(
        "no_machine_paths",
        named("path into a temporary or home folder", findings),
        "no path into a temporary or home folder in the outputs",
    )


def check_run_status(data: RunData) -> Check:
    summary = data.summary
    if not isinstance(summary, dict):
        return Check("run_status", False, "no readable summary.json: the run never finished (resume it with --resume ID)")
    stopped = summary.get("stopped")
    if stopped:
        return Check("run_status", False, f"stopped by rule {stopped.get('rule')} at {stopped.get('at')}: {stopped.get('reason')}")
    status = summary.get("status")
    failed = [name for name, ok in (summary.get("checks") or {}).items() if not ok]
    if status != "complete" or failed:
        return Check(
            "run_status", False, f"status {status!r}" + (f"; the pilot's own checks failed: {', '.join(failed)}" if failed else "")
        )
    return Check("run_status", True, "complete, not stopped, the pilot's own checks passed")


def check_recorded_hashes(data: RunData) -> Check:
    """Every SHA-256 the manifest records (the run's files, the reloaded checkpoint) against the file."""
    manifest = data.manifest if isinstance(data.manifest, dict) else {}
    recorded = manifest.get("sha256")
    if data.ended != "complete":
        return Check("recorded_hashes", True, "the run did not complete: its files' hashes are recorded at the end")
    if not isinstance(recorded, dict) or not recorded:
        return Check("recorded_hashes", False, "manifest.json records no SHA-256 of the run's files (checkpoint.pt included)")
    recorded = dict(recorded)
    reloaded = manifest.get("checkpoint_reload")
    if (
        isinstance(reloaded, dict)
        and "sha256" in reloaded
        and recorded.setdefault("checkpoint.pt", reloaded["sha256"]) != reloaded["sha256"]
    ):
        recorded["checkpoint.pt"] = "two different hashes recorded"
    problems = []
    for name in (*RUN_FILES, "texts.json", "model.py", "reload.py"):
        if name != "manifest.json" and name not in recorded and (data.run_dir / name).is_file():
            problems.append(f"{name} has no recorded SHA-256")
    for name, digest in sorted(recorded.items()):
        path = data.run_dir / name if isinstance(name, str) and _plain_name(name) else None
        if path is None:
            problems.append(f"{name!r} is not a file name of the run")
        elif not path.is_file() or path.is_symlink():
            problems.append(f"{name} is missing" if not path.is_symlink() else f"{name} is a link")
        elif sha256_file(path) != digest:
            problems.append(f"{name} differs from the SHA-256 the manifest records")
    return verdict("recorded_hashes", problems, f"all {len(recorded)} recorded SHA-256 match (checkpoint.pt included)")


def _plain_name(name: str) -> bool:
    return bool(name) and "/" not in name and "\\" not in name and name not in (".", "..")


def check_checksums(data: RunData) -> Check:
    return checksums_check(data.run_dir)


def checksums_check(run_dir: Path) -> Check:
    path = run_dir / CHECKSUMS
    if not path.is_file():
        return Check("checksums", True, f"no {CHECKSUMS} (written by `bundler runs export`): nothing to compare")
    problems, unlisted = compare_checksums(run_dir)
    detail = f"every file matches {CHECKSUMS}" + (f"; added after it: {', '.join(unlisted)}" if unlisted else "")
    return verdict("checksums", problems, detail)


def check_checkpoint_reload(data: RunData, python: str | None = None) -> Check:
    """The project's own code reloads the checkpoint (reload.py): nothing from the run folder runs."""
    ok, detail = reload_in_fresh_process(data.run_dir, data.manifest, _ids(data.predictions), data.project, python)
    return Check("checkpoint_reload", ok, detail)


# -- helpers --------------------------------------------------------------------------
def _read_json(path: Path) -> tuple[object, str | None]:
    if not path.is_file():
        return None, f"{path.name} is missing"
    try:
        return read_json(path, hint=""), None
    except ProjectFileError as error:
        return None, f"{path.name}: {error.message.removeprefix(str(path)).strip()} (empty or truncated?)"


def _read_jsonl(path: Path) -> JsonLines:
    lines = JsonLines()
    if not path.is_file():
        return lines
    lines.exists = True
    data = path.read_bytes()
    lines.empty = not data
    if data and not data.endswith(b"\n"):
        tail = data[data.rfind(b"\n") + 1 :][:60]
        lines.problems.append(f"{path.name}: the last line is truncated (no newline at the end): {tail!r}")
    for number, raw in enumerate(data.decode("utf-8", errors="replace").splitlines(), 1):
        if not raw.strip():
            continue
        try:
            record = parse_json(raw)
        except ValueError:
            lines.problems.append(f"{path.name}:{number} is not JSON")
            continue
        if not isinstance(record, dict) or "id" not in record:
            lines.problems.append(f"{path.name}:{number} has no id")
            continue
        lines.records.append(record)
    return lines


def _ids(lines: JsonLines) -> list[str]:
    return [str(record["id"]) for record in lines.records]


def _summary_count(data: RunData, key: str) -> int | None:
    value = data.summary.get(key) if isinstance(data.summary, dict) else None
    return value if isinstance(value, int) else None
