"""Run IDs and every path taken from a user, a configuration or a manifest stay where they
belong: a run ID names a folder of runs/, the runs, data and catalog lie inside the project,
an input document inside data_dir, and a file a run manifest names inside its run folder.
Each case plants what an escape would hit (a manifest.json outside), so a write would show.
"""

from __future__ import annotations

import json

import pytest

from tests.hostile.harness import assert_refused, run
from tests.hostile.prepared import edit_json, pilot_argv, pilot_env, project_copy


@pytest.fixture
def finished(tmp_path_factory, tmp_path):
    project = project_copy(tmp_path_factory, "finished", tmp_path)
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside/manifest.json").write_text("{}")  # what `runs decide ../../outside` used to write beside
    return project


@pytest.mark.parametrize("run_id", ["../../outside", "../runs/good", "ABSOLUTE", "..", ".", "a/b", "", "x" * 81, ".hidden", "good\n"])
def test_decide_takes_a_run_id_not_a_path(finished, run_id):
    run_id = str(finished.parent / "outside") if run_id == "ABSOLUTE" else run_id
    argv = ["runs", "decide", "--decision", "launch", "--why", "escape", "--project", str(finished), "--", run_id]
    outcome = run(argv, cwd=finished, watched=(finished.parent,))
    assert_refused(outcome, 2, "is not a run ID")


@pytest.mark.parametrize("flag", ["--run-id", "--resume"])
@pytest.mark.parametrize("run_id", ["../escape", "/tmp/bundler-hostile-escape", "a/b", "..", ".hidden", "new\n"])
def test_the_pilot_takes_a_run_id_not_a_path(finished, flag, run_id):
    outcome = run(pilot_argv(f"{flag}={run_id}"), cwd=finished, env=pilot_env(finished), watched=(finished.parent,))
    assert_refused(outcome, 2, "is not usable as a folder name")


@pytest.mark.parametrize("runs_dir", ["../outside", "/tmp", "runs/../../outside", 5])
@pytest.mark.parametrize("command", [["runs", "summary"], ["runs", "decide", "good", "--decision", "launch", "--why", "x"], ["plan"]])
def test_a_runs_folder_outside_the_project_is_refused(finished, runs_dir, command):
    edit_json(finished / "config/pilot.json", lambda config: config.update(runs_dir=runs_dir))
    outcome = run(command, cwd=finished, watched=(finished.parent,))
    assert_refused(outcome, 3, "runs_dir", "is not a folder inside the project")


@pytest.mark.parametrize(
    "key, value, words",
    [
        ("data_dir", "../../etc", "leads outside the project folder"),
        ("data_dir", "/etc", "is an absolute path"),
        ("data_dir", "~/data", "is an absolute path"),
        ("data_dir", "C:\\data", "is an absolute path"),
        ("manifest", "../x/MANIFEST.json", "leads outside the project folder"),
        ("runs_dir", "../runs", "leads outside the project folder"),
    ],
)
def test_the_pilot_keeps_its_paths_in_the_project(finished, key, value, words):
    edit_json(finished / "config/pilot.json", lambda config: config.update({key: value}))
    outcome = run(pilot_argv("--run-id", "never"), cwd=finished, env=pilot_env(finished), watched=(finished.parent,))
    assert_refused(outcome, 2, f"{key} = {value!r}", words)


@pytest.mark.parametrize("file", ["../../../../etc/passwd", "/etc/passwd", "sub/doc-01.txt", "", ".."])
def test_an_input_document_lies_in_data_dir(finished, file):
    edit_json(finished / "data/pilot/MANIFEST.json", lambda manifest: manifest["documents"][0].update(file=file))
    outcome = run(pilot_argv("--run-id", "never"), cwd=finished, env=pilot_env(finished), watched=(finished.parent,))
    assert_refused(outcome, 3, f"file {file!r} is not a file name in")


@pytest.mark.parametrize("catalog", ["../outside/catalog.toml", "/etc/catalog.toml", "LINK"])
def test_the_price_list_lies_in_the_project(finished, catalog):
    if catalog == "LINK":
        (finished.parent / "outside/catalog.toml").write_text((finished / "catalog.toml").read_text())
        (finished / "linked.toml").symlink_to(finished.parent / "outside/catalog.toml")
        catalog = "linked.toml"
    (finished / "plan.toml").write_text((finished / "plan.toml").read_text().replace('"catalog.toml"', json.dumps(catalog)))
    assert_refused(run(["plan"], cwd=finished, watched=(finished.parent,)), 3, "lies outside the project folder")


@pytest.mark.parametrize("run_id", ["..", ".hidden", "a/b", "x" * 81, "run١", "good\n"])
def test_bundler_and_the_pilot_refuse_the_same_run_ids(finished, run_id):
    """One rule (contracts/runid.py, the pilot's generated copy): what one refuses, the other refuses."""
    pilot = run(pilot_argv("--run-id", run_id), cwd=finished, env=pilot_env(finished))
    assert pilot.code == 2 and "is not usable as a folder name" in pilot.stderr, pilot.stderr
    argv = ["runs", "decide", "--decision", "launch", "--why", "x", "--project", str(finished), "--", run_id]
    assert_refused(run(argv, cwd=finished), 2, "is not a run ID")


@pytest.mark.parametrize(
    "change, words",
    [
        (lambda m: m.update(input_copy="../../../../etc/passwd"), "which is not a file name inside the run folder"),
        (lambda m: m["reload"].update(code=["model.py", "/etc/passwd"]), "'/etc/passwd', which is not a file name inside"),
        (lambda m: m["reload"].update(checkpoint="best.pt"), "'best.pt', which the run folder does not hold"),
        (lambda m: m["reload"].update(code=["model.py", "reload.py", "helpers.py"]), "'helpers.py', which the run folder does not hold"),
        (lambda m: m.update(input_copy="inputs-v2.json"), "'inputs-v2.json', which the run folder does not hold"),
    ],
)
def test_files_a_run_manifest_names_must_be_in_the_run(finished, change, words):
    edit_json(finished / "runs/good/manifest.json", change)
    outcome = run(["runs", "verify", "runs/good", "--no-reload", "--json"], cwd=finished, watched=(finished.parent,))
    assert_refused(outcome, 1, "manifest", json_mode=True)
    manifest_check = next(c for c in json.loads(outcome.stdout)["checks"] if c["name"] == "manifest")
    assert words in manifest_check["detail"]


def test_an_export_leaves_the_runs_secrets_behind_and_names_them(finished, tmp_path):
    """The run's .env, kaggle.json and .huggingface/token (contracts/secrets.py) never reach the copy."""
    good = finished / "runs/good"
    for name in (".env", "kaggle.json", ".huggingface/token"):
        (good / name).parent.mkdir(parents=True, exist_ok=True)
        (good / name).write_text("secret-value\n")
    outcome = run(["runs", "export", str(good), str(tmp_path / "copy"), "--no-reload", "--json"], cwd=finished)
    document = json.loads(outcome.stdout)
    assert sorted(document["withheld_as_secrets"]) == [".env", ".huggingface/token", "kaggle.json"], outcome.stderr
    copied = {path.relative_to(tmp_path / "copy").as_posix() for path in (tmp_path / "copy").rglob("*") if path.is_file()}
    assert copied and not copied & {".env", "kaggle.json", ".huggingface/token"}
    listed = (good / "SHA256SUMS").read_text().split()
    assert not {".env", "kaggle.json", ".huggingface/token"} & set(listed) and "manifest.json" in listed
