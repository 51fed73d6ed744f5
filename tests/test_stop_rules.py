"""Stop rules declared in config/pilot.json: each one fires, stops the run, keeps its ID."""

import json

import pytest

from tests.runs_support import new_project, pilot, set_config, snapshot


@pytest.fixture
def project(tmp_path):
    return new_project(tmp_path)


def _stopped(project, run_id):
    summary = json.loads((project / "runs" / run_id / "summary.json").read_text())
    assert summary["status"] == "stopped"
    assert set(summary["stopped"]) >= {"rule", "reason", "at"}
    assert json.loads((project / "runs" / run_id / "manifest.json").read_text())["status"] == "stopped"
    return summary["stopped"]


def test_the_template_declares_every_rule_before_the_trial(project):
    rules = json.loads((project / "config/pilot.json").read_text())["stop_rules"]
    assert rules["non_finite_loss"] and rules["essential_input_missing"] and rules["checkpoint_not_reloadable"]
    assert rules["quality_below_threshold"]["min_accuracy"] == 0.8
    assert len(rules["quality_below_threshold"]["check_set"]) == 11


def test_quality_below_threshold(project):
    set_config(project, training={"steps": 1, "learning_rate": 0.0, "scheduler_gamma": 0.5})
    result = pilot(project, "--run-id", "untrained")
    assert result.returncode == 6, result.stderr
    stopped = _stopped(project, "untrained")
    assert stopped["rule"] == "quality_below_threshold" and "below the declared 0.8" in stopped["reason"]
    assert not (project / "runs/untrained/predictions.jsonl").exists()  # stopped before the volume


def test_non_finite_loss(project):
    set_config(project, training={"steps": 3, "learning_rate": 8.0, "scheduler_gamma": 1.0})
    result = pilot(project, "--run-id", "diverged", fault="nan-loss:2")
    assert result.returncode == 6, result.stderr
    stopped = _stopped(project, "diverged")
    assert stopped["rule"] == "non_finite_loss" and stopped["at"] == "training step 2"
    summary = json.loads((project / "runs/diverged/summary.json").read_text())
    assert summary["losses"][1] == "nan"


def test_checkpoint_not_reloadable(project):
    result = pilot(project, "--run-id", "broken-ckpt", fault="corrupt-checkpoint")
    assert result.returncode == 6, result.stderr
    stopped = _stopped(project, "broken-ckpt")
    assert stopped["rule"] == "checkpoint_not_reloadable" and "does not load as a weights-only checkpoint" in stopped["reason"]
    assert "weights_only" not in stopped["reason"].replace("weights-only", "")  # never torch's advice to unpickle it unsafely
    assert not (project / "runs/broken-ckpt/__pycache__").exists()


def test_essential_input_missing_during_the_run(project):
    result = pilot(project, "--run-id", "cut", fault="vanish:data/pilot/doc-08.txt")
    assert result.returncode == 6, result.stderr
    stopped = _stopped(project, "cut")
    assert stopped["rule"] == "essential_input_missing" and "doc-08" in stopped["reason"]
    assert str(project) not in stopped["reason"]  # no machine path in the evidence
    summary = json.loads((project / "runs/cut/summary.json").read_text())
    assert summary["inputs"] == 12 and summary["accepted"] == 7


def test_an_input_missing_at_resume_is_refused_and_the_run_kept(project):
    assert pilot(project, "--run-id", "cut", fault="items:3").returncode == -9
    document = project / "data/pilot/doc-08.txt"
    original = document.read_bytes()
    document.unlink()
    before = snapshot(project / "runs/cut")
    result = pilot(project, "--resume", "cut")
    assert result.returncode == 3 and "doc-08" in result.stderr and "is missing" in result.stderr
    assert snapshot(project / "runs/cut") == before
    document.write_bytes(original)
    assert pilot(project, "--resume", "cut").returncode == 0


def test_a_stopped_run_keeps_its_id_and_evidence(project):
    set_config(project, training={"steps": 1, "learning_rate": 0.0, "scheduler_gamma": 0.5})
    assert pilot(project, "--run-id", "stop-1").returncode == 6
    before = snapshot(project / "runs/stop-1")
    again = pilot(project, "--resume", "stop-1")
    assert again.returncode == 5 and "is stopped" in again.stderr
    reuse = pilot(project, "--run-id", "stop-1")
    assert reuse.returncode == 5
    assert snapshot(project / "runs/stop-1") == before


def test_reusing_an_id_with_another_config_is_refused(project):
    assert pilot(project, "--run-id", "first", fault="after-manifest").returncode == -9
    set_config(project, limits={"min_chars": 41, "max_chars": 60000})
    result = pilot(project, "--run-id", "first")
    assert result.returncode == 5 and "with another configuration" in result.stderr


@pytest.mark.parametrize(
    "rules, words",
    [
        ({"no_such_rule": True}, "stop_rules.no_such_rule is not a known key"),
        ({"non_finite_loss": "yes"}, "stop_rules.non_finite_loss must be true or false, got the text 'yes'"),
        ({"quality_below_threshold": {"min_accuracy": 1.5}}, "min_accuracy = 1.5 is out of range: 0 to 1"),
        ({"quality_below_threshold": {"min_accuracy": 0.5, "check_set": ["doc-99"]}}, "'doc-99'"),
    ],
)
def test_malformed_stop_rules_are_refused_before_the_run(project, rules, words):
    set_config(project, stop_rules=rules)
    result = pilot(project, "--run-id", "never")
    assert result.returncode == 2, result.stderr
    assert words in result.stderr
    assert not (project / "runs/never").exists()


def test_a_rule_left_out_is_off(project):
    set_config(project, training={"steps": 1, "learning_rate": 0.0, "scheduler_gamma": 0.5}, stop_rules={"non_finite_loss": True})
    result = pilot(project, "--run-id", "no-quality-rule")
    assert result.returncode == 0, result.stderr
