"""Resume with hostile changes between the kill and `--resume`: the input changed, a document
gone, a stray file in data/pilot, another configuration, a broken run manifest or
checkpoint. Each is refused before the run is touched (it resumes once the cause is gone);
a run whose manifest says complete but whose summary is missing gets its summary back.
"""

from __future__ import annotations

import json

import pytest

from tests.hostile.harness import assert_refused, run, snapshot
from tests.hostile.prepared import edit_json, pilot_argv, pilot_env, project_copy
from tests.runs_support import pilot


@pytest.fixture
def killed(tmp_path_factory, tmp_path):
    """A project whose run `cut` was killed right after its manifest was written."""
    return project_copy(tmp_path_factory, "killed", tmp_path)


def resume(project, run_id="cut"):
    return run(pilot_argv("--resume", run_id), cwd=project, env=pilot_env(project), watched=(project,))


def _append(path, text):
    path.write_bytes(path.read_bytes() + text)


@pytest.mark.parametrize(
    "change, code, words",
    [
        (lambda p: _append(p / "data/pilot/doc-05.txt", b"one more line\n"), 3, "document doc-05"),
        (lambda p: (p / "data/pilot/doc-08.txt").unlink(), 3, "document doc-08"),
        (lambda p: (p / "data/pilot/doc-13.txt").write_text("smuggled in\n"), 3, "doc-13.txt"),
        (lambda p: (p / "data/pilot/doc-01.txt").write_bytes(b""), 3, "document doc-01"),
        (lambda p: edit_json(p / "data/pilot/MANIFEST.json", lambda m: m.update(description="edited")), 5, "another input"),
        (lambda p: edit_json(p / "config/pilot.json", lambda c: c["limits"].update(min_chars=41)), 5, "config hash"),
        (lambda p: edit_json(p / "config/pilot.json", lambda c: c["training"].update(steps="two")), 2, "training.steps"),
        (lambda p: (p / "runs/cut/manifest.json").write_text("{not json"), 5, "is not a readable run manifest"),
        (lambda p: (p / "runs/cut/manifest.json").write_text("[]"), 5, "is not a readable run manifest"),
        (lambda p: edit_json(p / "runs/cut/manifest.json", lambda m: m.update(status="stopped")), 5, "run cut is stopped"),
    ],
)
def test_a_changed_run_or_input_is_refused_and_the_run_kept(killed, change, code, words):
    change(killed)
    assert_refused(resume(killed), code, words)


def test_the_refused_run_resumes_once_the_input_is_restored(killed):
    stray = killed / "data/pilot/notes.txt"
    stray.write_text("my notes\n")
    assert_refused(resume(killed), 3, "notes.txt")
    stray.unlink()
    before = snapshot(killed / "runs/cut")
    done = run(pilot_argv("--resume", "cut"), cwd=killed, env=pilot_env(killed))
    assert done.code == 0, done.stderr
    assert snapshot(killed / "runs/cut") != before
    assert json.loads((killed / "runs/cut/summary.json").read_text())["status"] == "complete"


@pytest.mark.parametrize(
    "argv, words",
    [
        (["--resume", "never-ran"], "no run never-ran to resume"),
        (["--resume", "cut", "--run-id", "other"], "--run-id and --resume name different runs"),
    ],
)
def test_resume_of_what_is_not_there(killed, argv, words):
    outcome = run(pilot_argv(*argv), cwd=killed, env=pilot_env(killed), watched=(killed,))
    assert_refused(outcome, 2, words)


def test_a_garbage_checkpoint_stops_the_run_without_unsafe_advice(tmp_path_factory, tmp_path):
    project = project_copy(tmp_path_factory, "fresh", tmp_path)
    assert pilot(project, "--run-id", "ckpt", fault="after-checkpoint").returncode == -9
    (project / "runs/ckpt/checkpoint.pt").write_bytes(b"\x80\x02 not a checkpoint: the disk filled up half way")
    outcome = run(pilot_argv("--resume", "ckpt"), cwd=project, env=pilot_env(project))
    assert_refused(outcome, 6, "checkpoint_not_reloadable", "does not load as a weights-only checkpoint")
    assert "weights_only" not in (outcome.stderr + (project / "runs/ckpt/summary.json").read_text()).replace("weights-only", "")


def test_a_complete_run_without_its_summary_gets_it_back(tmp_path_factory, tmp_path):
    project = project_copy(tmp_path_factory, "finished", tmp_path)
    original = json.loads((project / "runs/good/summary.json").read_text())
    (project / "runs/good/summary.json").unlink()
    verify = run(["runs", "verify", "runs/good", "--no-reload"], cwd=project)
    assert verify.code == 1 and "never finished" in verify.stderr
    done = run(pilot_argv("--resume", "good"), cwd=project, env=pilot_env(project))
    assert done.code == 0, done.stderr
    repaired = json.loads((project / "runs/good/summary.json").read_text())
    assert {k: v for k, v in repaired.items() if k != "seconds"} == {k: v for k, v in original.items() if k != "seconds"}
    assert run(["runs", "verify", "runs/good"], cwd=project).code == 0
