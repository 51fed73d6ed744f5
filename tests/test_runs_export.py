"""`bundler runs export`: checksums at the source, a checked copy, verify on the copy."""

import json
import shutil

import pytest

from bundler.evidence.checksums import read_checksums
from bundler.evidence.verify import verify_run
from tests.conftest import run_cli
from tests.runs_support import new_project, pilot, set_config, snapshot


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    project = new_project(tmp_path_factory.mktemp("export"))
    assert pilot(project, "--run-id", "good").returncode == 0
    return project


def test_export_copies_checks_and_verifies_the_copy(project, tmp_path):
    dest = tmp_path / "evidence" / "good"
    result = run_cli("runs", "export", str(project / "runs/good"), str(dest), "--json")
    assert result.returncode == 0, result.stderr
    payload = json.loads(result.stdout)
    assert payload["accepted"] and payload["copy_matches_checksums"]
    assert payload["verify"]["run_dir"] == str(dest)
    sums, malformed = read_checksums(project / "runs/good/SHA256SUMS")
    assert malformed == []
    assert {"manifest.json", "predictions.jsonl", "checkpoint.pt", "reload.py"} <= set(sums)
    assert snapshot(dest) == snapshot(project / "runs/good")
    assert "rsync -av --partial USER@BOX:PROJECT/runs/good/" in payload["pull_commands"]["rsync"]
    assert "sha256sum -c" in result.stderr and "scp -rp" in result.stderr


def test_the_copy_reloads_without_the_project(project, tmp_path):
    dest = tmp_path / "alone"
    assert run_cli("runs", "export", str(project / "runs/good"), str(dest), "--no-reload").returncode == 0
    moved = tmp_path / "elsewhere" / "good"
    shutil.move(dest, moved)
    checks = {c.name: c for c in verify_run(moved).checks}
    assert checks["checkpoint_reload"].ok, checks["checkpoint_reload"].detail


def test_a_file_changed_after_export_is_caught_on_the_copy(project, tmp_path):
    dest = tmp_path / "copy"
    assert run_cli("runs", "export", str(project / "runs/good"), str(dest), "--no-reload").returncode == 0
    with open(dest / "predictions.jsonl", "a") as handle:
        handle.write('{"id":"doc-01","category":"invoice","score":0.5}\n')
    failed = {c.name: c.detail for c in verify_run(dest, reload=False).checks if not c.ok}
    assert "predictions.jsonl differs from its SHA-256" in failed["checksums"]


def test_existing_destination_is_refused_untouched(project, tmp_path):
    dest = tmp_path / "taken"
    dest.mkdir()
    (dest / "keep.txt").write_text("mine")
    result = run_cli("runs", "export", str(project / "runs/good"), str(dest))
    assert result.returncode == 5 and "already exists" in result.stderr
    assert [p.name for p in dest.iterdir()] == ["keep.txt"]
    empty = tmp_path / "empty"
    empty.mkdir()
    assert run_cli("runs", "export", str(project / "runs/good"), str(empty)).returncode == 5


def test_a_stopped_run_is_exported_as_evidence_but_not_accepted(tmp_path):
    project = new_project(tmp_path)
    set_config(project, training={"steps": 1, "learning_rate": 0.0, "scheduler_gamma": 0.5})
    assert pilot(project, "--run-id", "stopped").returncode == 6
    dest = tmp_path / "stopped-copy"
    result = run_cli("runs", "export", str(project / "runs/stopped"), str(dest), "--no-reload", "--json")
    assert result.returncode == 1
    assert json.loads(result.stdout)["accepted"] is False
    assert (dest / "summary.json").is_file() and "not an accepted delivery" in result.stderr


def test_missing_run_folder(tmp_path):
    result = run_cli("runs", "export", str(tmp_path / "nope"), str(tmp_path / "dest"))
    assert result.returncode == 2 and not (tmp_path / "dest").exists()
