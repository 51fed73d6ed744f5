"""Resume: a run killed at any point, then resumed, ends equal to an uninterrupted run."""

import json

import pytest

from tests.runs_support import new_project, pilot, read_jsonl, set_config


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    project = new_project(tmp_path_factory.mktemp("resume"))
    result = pilot(project, "--run-id", "whole")
    assert result.returncode == 0, result.stderr
    return project


def _summary_without_timing(run):
    summary = json.loads((run / "summary.json").read_text())
    summary.pop("seconds")
    return summary


# Points across the whole run: before anything is written, before and after the checkpoint,
# after the rejection, after some predictions, in the middle of writing a line, and after
# the last line but before the summary (tests/pilot_faults.py makes the kill).
KILL_POINTS = ["after-manifest", "after-training", "after-checkpoint", "items:1", "items:7", "partial-line:4", "items:12"]


@pytest.mark.parametrize("fault", KILL_POINTS)
def test_killed_then_resumed_equals_an_uninterrupted_run(project, fault):
    run_id = "killed-" + fault.replace(":", "-")
    killed = pilot(project, "--run-id", run_id, fault=fault)
    assert killed.returncode == -9, killed.stderr  # SIGKILL: nothing was cleaned up
    run = project / "runs" / run_id
    assert not (run / "summary.json").exists()

    resumed = pilot(project, "--resume", run_id)
    assert resumed.returncode == 0, resumed.stderr
    whole = project / "runs/whole"
    for name in ("predictions.jsonl", "rejections.jsonl"):
        assert (run / name).read_bytes() == (whole / name).read_bytes(), name
    assert _summary_without_timing(run) == _summary_without_timing(whole)
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["status"] == "complete"
    assert [a["kind"] for a in manifest["attempts"]] == ["start", "resume"]


def test_resume_processes_only_what_is_missing_and_records_the_partial_line(project):
    killed = pilot(project, "--run-id", "half", fault="partial-line:5")
    assert killed.returncode == -9
    run = project / "runs/half"
    data = (run / "predictions.jsonl").read_bytes()
    assert not data.endswith(b"\n")  # the kill left half a line behind
    kept = data[: data.rfind(b"\n") + 1]
    done = [json.loads(line)["id"] for line in kept.decode().splitlines()]

    assert pilot(project, "--resume", "half").returncode == 0
    resume = json.loads((run / "manifest.json").read_text())["attempts"][-1]
    assert resume["lines_kept"] == 1 + len(done)  # the rejection and the whole prediction lines
    assert resume["partial_line_bytes_dropped"] == {"predictions.jsonl": len(data) - len(kept)}
    assert (run / "predictions.jsonl").read_bytes().startswith(kept)
    ids = [p["id"] for p in read_jsonl(run / "predictions.jsonl")]
    assert len(ids) == len(set(ids)) == 11


def test_resume_after_the_checkpoint_reloads_it_instead_of_training(project):
    assert pilot(project, "--run-id", "ckpt", fault="items:3").returncode == -9
    checkpoint = project / "runs/ckpt/checkpoint.pt"
    before = checkpoint.read_bytes()
    assert pilot(project, "--resume", "ckpt").returncode == 0
    assert checkpoint.read_bytes() == before


def test_resume_with_a_changed_config_is_refused(project):
    assert pilot(project, "--run-id", "changed", fault="items:2").returncode == -9
    before = (project / "runs/changed/predictions.jsonl").read_bytes()
    original = (project / "config/pilot.json").read_text()
    try:
        set_config(project, limits={"min_chars": 41, "max_chars": 60000})
        result = pilot(project, "--resume", "changed")
    finally:
        (project / "config/pilot.json").write_text(original)
    assert result.returncode == 5
    assert "config hash" in result.stderr and "new run ID" in result.stderr
    assert (project / "runs/changed/predictions.jsonl").read_bytes() == before


def test_resume_of_a_complete_run_changes_nothing(project):
    before = (project / "runs/whole/manifest.json").read_bytes()
    result = pilot(project, "--resume", "whole")
    assert result.returncode == 0 and "already complete" in result.stderr
    assert (project / "runs/whole/manifest.json").read_bytes() == before


def test_resume_of_an_unknown_run(project):
    result = pilot(project, "--resume", "never-ran")
    assert result.returncode == 2 and "no run never-ran to resume" in result.stderr
