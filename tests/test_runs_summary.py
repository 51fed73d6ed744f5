"""`bundler runs summary` and `bundler runs decide`."""

import json

import pytest

from tests.conftest import run_cli
from tests.runs_support import new_project, pilot, read_jsonl, set_config


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    project = new_project(tmp_path_factory.mktemp("summary"))
    assert pilot(project, "--run-id", "a-good").returncode == 0
    assert pilot(project, "--run-id", "b-killed", fault="items:4").returncode == -9
    original = (project / "config/pilot.json").read_text()
    set_config(project, training={"steps": 1, "learning_rate": 0.0, "scheduler_gamma": 0.5})
    assert pilot(project, "--run-id", "c-stopped").returncode == 6
    (project / "config/pilot.json").write_text(original)
    return project


def test_summary_lists_every_run_with_its_status(project):
    result = run_cli("runs", "summary", str(project), "--json")
    assert result.returncode == 0, result.stderr
    runs = {row["run_id"]: row for row in json.loads(result.stdout)["runs"]}
    assert runs["a-good"]["status"] == "accepted" and runs["a-good"]["accepted"] == 11 and runs["a-good"]["rejected"] == 1
    assert runs["b-killed"]["status"] == "incomplete" and "--resume b-killed" in runs["b-killed"]["reasons"][0]
    assert runs["c-stopped"]["status"] == "stopped" and "quality_below_threshold" in runs["c-stopped"]["reasons"][0]
    assert runs["a-good"]["config_sha256"] != runs["c-stopped"]["config_sha256"]
    assert runs["a-good"]["seconds"] > 0


def test_decide_appends_the_decision_and_summary_shows_it(project):
    plan_before = (project / "plan.toml").read_bytes()
    first = run_cli("runs", "decide", "c-stopped", "--decision", "revise-config", "--why", "lr 0 learns nothing", "--project", str(project))
    second = run_cli(
        "runs", "decide", "a-good", "--decision", "launch", "--why", "11/11 right, doc-12 rejected", "--project", str(project), "--json"
    )
    third = run_cli("runs", "decide", "a-good", "--decision", "fix-env", "--why", "the box has the wrong driver", "--project", str(project))
    assert first.returncode == second.returncode == third.returncode == 0, first.stderr
    history = read_jsonl(project / "runs/a-good/decisions.jsonl")
    assert [d["decision"] for d in history] == ["launch", "fix-env"]
    assert history[0]["why"] == "11/11 right, doc-12 rejected" and history[0]["run_status"] == "accepted" and history[0]["time"]
    assert (project / "plan.toml").read_bytes() == plan_before
    runs = {row["run_id"]: row for row in json.loads(run_cli("runs", "summary", str(project), "--json").stdout)["runs"]}
    assert runs["a-good"]["decision"]["decision"] == "fix-env"
    assert runs["c-stopped"]["decision"]["why"] == "lr 0 learns nothing"


def test_launch_on_a_run_that_is_not_accepted_is_flagged(project):
    result = run_cli("runs", "decide", "b-killed", "--decision", "launch", "--why", "hurry", "--project", str(project))
    assert result.returncode == 0 and "not an accepted delivery" in result.stderr


@pytest.mark.parametrize(
    "args, code, words",
    [
        (["a-good", "--decision", "ship-it", "--why", "x"], 2, "ship-it"),
        (["a-good", "--decision", "launch", "--why", "  "], 2, "needs its rationale"),
        (["nope", "--decision", "launch", "--why", "x"], 2, "no run nope"),
    ],
)
def test_bad_decisions_are_refused(project, args, code, words):
    before = (project / "runs/a-good/decisions.jsonl").read_bytes() if (project / "runs/a-good/decisions.jsonl").exists() else b""
    result = run_cli("runs", "decide", *args, "--project", str(project))
    assert result.returncode == code and words in result.stderr
    after = (project / "runs/a-good/decisions.jsonl").read_bytes() if (project / "runs/a-good/decisions.jsonl").exists() else b""
    assert after == before


def test_summary_of_a_project_without_runs(tmp_path):
    project = new_project(tmp_path)
    result = run_cli("runs", "summary", str(project), "--json")
    assert result.returncode == 0 and json.loads(result.stdout)["runs"] == []
