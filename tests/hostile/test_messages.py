"""Messages that say what is actually wrong: a file is called a file, a path out of the project
is called that (not "must be relative"), a wrong type is a wrong type (not "missing"), a
damaged checkpoint never comes with torch's advice to unpickle it with weights_only=False.
"""

from __future__ import annotations

import json

import pytest

from tests.hostile.harness import assert_refused, run
from tests.hostile.prepared import edit_json, pilot_argv, pilot_env, project_copy


@pytest.fixture
def project(tmp_path_factory, tmp_path):
    return project_copy(tmp_path_factory, "finished", tmp_path)


def words_absent(outcome, *words):
    for word in words:
        assert word not in outcome.stderr, outcome.stderr


def test_new_onto_a_file_says_it_is_a_file(tmp_path):
    (tmp_path / "notes").write_text("mine\n")
    outcome = run(["new", "notes", "--no-input"], cwd=tmp_path, watched=(tmp_path,))
    assert_refused(outcome, 5, "notes is a file")
    words_absent(outcome, "not empty", "empty that folder")


def test_new_into_the_current_non_empty_folder(tmp_path):
    (tmp_path / "thesis.tex").write_text("years of work\n")
    assert_refused(run(["new", ".", "--no-input", "--name", "x"], cwd=tmp_path, watched=(tmp_path,)), 5, "is not empty")


@pytest.mark.parametrize("data_dir", ["../common/data", "data/../../data"])
def test_a_data_dir_escaping_the_project_says_so(project, data_dir):
    edit_json(project / "config/pilot.json", lambda config: config.update(data_dir=data_dir))
    outcome = run(pilot_argv("--run-id", "x"), cwd=project, env=pilot_env(project), watched=(project,))
    assert_refused(outcome, 2, "leads outside the project folder")
    words_absent(outcome, "must be relative", "must be a path relative")


@pytest.mark.parametrize(
    "section, value, words",
    [("model", 5, "model must be an object, got 5"), ("categories", None, "categories must be a non-empty list of names, got null")],
)
def test_a_wrong_type_is_not_called_missing(project, section, value, words):
    edit_json(project / "config/pilot.json", lambda config: config.update({section: value}))
    outcome = run(pilot_argv("--run-id", "x"), cwd=project, env=pilot_env(project), watched=(project,))
    assert_refused(outcome, 2, words)
    words_absent(outcome, "missing", "lacks")


def test_a_price_list_entry_of_the_wrong_type(project):
    text = (project / "catalog.toml").read_text().replace('price = { 3 = "47.14", 7 = "110", 30 = "390" }', 'price = "47.14"')
    (project / "catalog.toml").write_text(text)
    outcome = run(["plan"], cwd=project, watched=(project,))
    assert_refused(outcome, 3, "price must be a table, got the text '47.14'")
    words_absent(outcome, "missing")


def test_a_damaged_checkpoint_is_described_without_unsafe_advice(project):
    (project / "runs/good/checkpoint.pt").write_bytes(b"PK\x03\x04 half a zip archive")
    outcome = run(["runs", "verify", "runs/good", "--json"], cwd=project, watched=(project,))
    assert_refused(outcome, 1, "checkpoint_reload", json_mode=True)
    detail = next(c["detail"] for c in json.loads(outcome.stdout)["checks"] if c["name"] == "checkpoint_reload")
    assert detail.startswith("checkpoint.pt does not load as a weights-only checkpoint")
    assert "weights_only" not in outcome.stdout + outcome.stderr and "arbitrary code" not in outcome.stdout


@pytest.mark.parametrize(
    "argv, code, words",
    [
        (["runs", "verify", "config/pilot.json"], 2, "is a file, not a run folder"),
        (["runs", "verify", "runs/nothing"], 2, "does not exist"),
        (["runs", "export", "runs/good", "runs/good/copy", "--no-reload"], 2, "is inside the run folder"),
        (["plan", "data"], 3, "plan.toml not found"),
    ],
)
def test_commands_pointed_at_the_wrong_thing(project, argv, code, words):
    assert_refused(run(argv, cwd=project, watched=(project,)), code, words)


def test_the_pilot_pointed_at_a_missing_configuration(project):
    outcome = run([*pilot_argv()[:3], "--config", "config/other.json"], cwd=project, env=pilot_env(project), watched=(project,))
    assert_refused(outcome, 2, "configuration file", "other.json not found")
