"""`bundler runs verify`: a real run passes; each kind of tampering is named, nothing modified."""

import json
import shutil

import pytest

from bundler.errors import UsageError
from bundler.evidence.verify import verify_run
from tests.conftest import run_cli
from tests.runs_support import new_project, pilot, set_config, snapshot


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    project = new_project(tmp_path_factory.mktemp("verify"))
    assert pilot(project, "--run-id", "good").returncode == 0
    return project


@pytest.fixture
def run(project, tmp_path):
    """A private copy of the good run to tamper with (inside a project, like the original)."""
    copy = tmp_path / "runs" / "good"
    shutil.copytree(project / "runs/good", copy)
    return copy


def _failed(result) -> dict:
    return {check.name: check.detail for check in result.checks if not check.ok}


def test_a_real_run_is_an_accepted_delivery(project):
    result = run_cli("runs", "verify", str(project / "runs/good"), "--json")
    assert result.returncode == 0, result.stderr
    payload = json.loads(result.stdout)
    assert payload["accepted"] is True
    names = {check["name"] for check in payload["checks"]}
    assert {
        "manifest",
        "files_complete",
        "each_input_once",
        "no_invented_ids",
        "counts_add_up",
        "categories_allowed",
        "rejection_reasons",
        "no_machine_paths",
        "run_status",
        "checkpoint_reload",
    } <= names
    assert all(check["ok"] for check in payload["checks"])
    assert "re-predicted all 11 accepted documents" in next(c for c in payload["checks"] if c["name"] == "checkpoint_reload")["detail"]
    assert payload["status"] == "accepted"


def test_the_manifest_records_environment_and_reload_instructions(project):
    manifest = json.loads((project / "runs/good/manifest.json").read_text())
    assert set(manifest["environment"]) >= {"python", "torch", "lock_sha256", "image_digest"}
    assert manifest["reload"]["command"] == "python runs/good/reload.py runs/good"
    assert (project / "runs/good/reload.py").is_file() and (project / "runs/good/inputs.json").is_file()


def _lines(run):
    return (run / "predictions.jsonl").read_text().splitlines(keepends=True)


def test_removed_line(run):
    lines = _lines(run)
    (run / "predictions.jsonl").write_text("".join(lines[:3] + lines[4:]))
    failed = _failed(verify_run(run, reload=False))
    assert "doc-04" in failed["each_input_once"] and "missing" in failed["each_input_once"]
    assert "not the 12 inputs" in failed["counts_add_up"]


def test_duplicated_line(run):
    lines = _lines(run)
    (run / "predictions.jsonl").write_text("".join(lines + [lines[2]]))
    failed = _failed(verify_run(run, reload=False))
    assert "doc-03 (2 times)" in failed["each_input_once"]


def test_invented_id_and_unknown_category_are_both_listed(run):
    lines = _lines(run)
    lines.append(json.dumps({"id": "doc-99", "category": "invoice", "score": 0.9}) + "\n")
    record = json.loads(lines[0])
    lines[0] = json.dumps(record | {"category": "recipe"}) + "\n"
    (run / "predictions.jsonl").write_text("".join(lines))
    failed = _failed(verify_run(run, reload=False))
    assert "doc-99" in failed["no_invented_ids"]
    assert "doc-01: 'recipe'" in failed["categories_allowed"]
    assert "counts_add_up" in failed  # every problem, not only the first


def test_rejection_without_reason(run):
    (run / "rejections.jsonl").write_text(json.dumps({"id": "doc-12", "reason": " "}) + "\n")
    assert "doc-12" in _failed(verify_run(run, reload=False))["rejection_reasons"]


def test_truncated_last_line(run):
    data = (run / "predictions.jsonl").read_bytes()
    (run / "predictions.jsonl").write_bytes(data[:-20])
    failed = _failed(verify_run(run, reload=False))
    assert "last line is truncated" in failed["files_complete"]


def test_missing_manifest(run):
    (run / "manifest.json").unlink()
    failed = _failed(verify_run(run, reload=False))
    assert failed["manifest"] == "manifest.json is missing"
    assert "manifest.json is missing" in failed["files_complete"]


def test_empty_summary(run):
    (run / "summary.json").write_text("")
    failed = _failed(verify_run(run, reload=False))
    assert "summary.json is empty" in failed["files_complete"]
    assert "never finished" in failed["run_status"]


def test_path_into_a_temporary_or_home_folder(run):
    lines = (run / "rejections.jsonl").read_text()
    (run / "rejections.jsonl").write_text(lines.replace("not UTF-8", "not UTF-8 (see /home/alice/scratch/doc-12.txt)"))
    assert "rejections.jsonl:1 '/home/alice/scratch/doc-12.txt'" in _failed(verify_run(run, reload=False))["no_machine_paths"]


def test_tampered_config_no_longer_matches_its_hash(run):
    manifest = json.loads((run / "manifest.json").read_text())
    manifest["config"]["limits"]["min_chars"] = 1
    (run / "manifest.json").write_text(json.dumps(manifest))
    assert "does not match the recorded config" in _failed(verify_run(run, reload=False))["manifest"]


def test_checkpoint_that_does_not_load_is_named_and_nothing_is_modified(run):
    (run / "checkpoint.pt").write_bytes(b"\x00" * 64)
    before = snapshot(run)
    result = run_cli("runs", "verify", str(run), "--json")
    assert result.returncode == 1
    checks = {c["name"]: c for c in json.loads(result.stdout)["checks"]}
    detail = checks["checkpoint_reload"]["detail"]
    assert not checks["checkpoint_reload"]["ok"] and "does not load as a weights-only checkpoint" in detail
    assert "weights_only" not in detail  # torch's advice to unpickle it unsafely is never relayed
    assert "checkpoint_reload" in result.stderr
    assert snapshot(run) == before


def test_changed_stored_prediction_is_not_reproduced(run):
    lines = _lines(run)
    record = json.loads(lines[0])
    lines[0] = json.dumps(record | {"score": round(record["score"] / 2, 6)}) + "\n"
    (run / "predictions.jsonl").write_text("".join(lines))
    detail = _failed(verify_run(run))["checkpoint_reload"]
    assert "doc-01: reloaded score" in detail


def test_every_accepted_document_is_re_predicted(run):
    lines = _lines(run)  # two documents' categories swapped: both still allowed, neither in the old three-document sample
    for index in (3, 7):
        record = json.loads(lines[index])
        lines[index] = json.dumps(record | {"category": "contract" if record["category"] != "contract" else "invoice"}) + "\n"
    (run / "predictions.jsonl").write_text("".join(lines))
    detail = _failed(verify_run(run))["checkpoint_reload"]
    assert "doc-04: reloaded model says" in detail and "doc-08: reloaded model says" in detail


def test_without_torch_the_reload_check_fails_with_a_hint(run, monkeypatch):
    import importlib.util

    from bundler.evidence import reload

    real = importlib.util.find_spec
    monkeypatch.setattr(reload.importlib.util, "find_spec", lambda name, *a: None if name == "torch" else real(name, *a))
    ok, detail = reload.reload_in_fresh_process(run, json.loads((run / "manifest.json").read_text()), ["doc-01"], None)
    assert not ok and "torch is not installed" in detail and "--python" in detail


def test_a_folder_that_is_not_a_run(tmp_path):
    (tmp_path / "notes.txt").write_text("hello")
    result = run_cli("runs", "verify", str(tmp_path), "--json")
    assert result.returncode == 1
    checks = json.loads(result.stdout)["checks"]
    assert checks == [
        {
            "name": "run_folder",
            "ok": False,
            "detail": f"{tmp_path} holds none of manifest.json, inputs.json, predictions.jsonl, rejections.jsonl, summary.json, "
            "checkpoint.pt: it is not a run folder.",
        }
    ]


def test_a_missing_folder_is_a_usage_error(tmp_path):
    with pytest.raises(UsageError, match="does not exist"):
        verify_run(tmp_path / "nope")
    assert run_cli("runs", "verify", str(tmp_path / "nope")).returncode == 2


def test_a_stopped_run_is_not_accepted(tmp_path):
    project = new_project(tmp_path)
    set_config(project, training={"steps": 1, "learning_rate": 0.0, "scheduler_gamma": 0.5})
    assert pilot(project, "--run-id", "stopped").returncode == 6
    failed = _failed(verify_run(project / "runs/stopped", reload=False))
    assert "stopped by rule quality_below_threshold" in failed["run_status"]
