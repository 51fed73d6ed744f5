"""Forged evidence, links and secrets in a run, concurrent and interrupted runs.

Each case forges or disturbs a run the way a careless or dishonest user could and asserts
what `runs verify`, `runs export`, `runs summary` or `bundler run` must answer: a forged
hash, a replaced checkpoint or an edited output is named; code the run folder supplies is
never executed; an export copies no secret and follows no link out of the run; a run folder
is held by one process; a killed run never looks complete.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.hostile.harness import assert_refused, run
from tests.hostile.prepared import edit_json, pilot_argv, pilot_env, project_copy
from tests.runs_support import FAULTS, adopted, killed_run, running_run


@pytest.fixture
def finished(tmp_path_factory, tmp_path):
    return project_copy(tmp_path_factory, "finished", tmp_path)


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def failed_checks(outcome) -> dict[str, str]:
    return {c["name"]: c["detail"] for c in json.loads(outcome.stdout)["checks"] if not c["ok"]}


# -- the template pilot's runs: forged checkpoints and code the run supplies -----------------------
def test_a_checkpoint_of_random_bytes_is_named(finished):
    checkpoint = finished / "runs/good/checkpoint.pt"
    checkpoint.write_bytes(os.urandom(checkpoint.stat().st_size))
    outcome = run(["runs", "verify", "runs/good", "--no-reload", "--json"], cwd=finished, watched=(finished,))
    assert_refused(outcome, 1, "not an accepted delivery", json_mode=True)
    assert "checkpoint.pt" in " ".join(failed_checks(outcome).values())


def test_a_forged_checkpoint_hash_in_the_manifest_is_still_caught(finished):
    run_dir = finished / "runs/good"
    (run_dir / "checkpoint.pt").write_bytes(os.urandom(4096))
    edit_json(run_dir / "manifest.json", lambda m: m.update(checkpoint_sha256=sha256(run_dir / "checkpoint.pt")))
    outcome = run(["runs", "verify", "runs/good", "--json"], cwd=finished, watched=(finished,))
    assert_refused(outcome, 1, "not an accepted delivery", json_mode=True)
    assert "checkpoint.pt" in " ".join(failed_checks(outcome).values())


def test_a_reload_script_that_prints_ok_is_never_executed(finished, tmp_path):
    run_dir = finished / "runs/good"
    marker = tmp_path / "executed"
    (run_dir / "checkpoint.pt").write_bytes(os.urandom(4096))
    (run_dir / "reload.py").write_text(
        f"import json, pathlib\npathlib.Path({str(marker)!r}).write_text('ran')\n"
        'print(json.dumps({"ok": True, "predicted": [], "problems": []}))\n'
    )
    outcome = run(["runs", "verify", "runs/good", "--json"], cwd=finished, watched=(finished,))
    assert not marker.exists(), "verify executed reload.py from the run folder"
    assert_refused(outcome, 1, "not an accepted delivery", json_mode=True)


def test_a_model_py_in_the_run_is_never_imported(finished, tmp_path):
    marker = tmp_path / "imported"
    model = finished / "runs/good/model.py"
    model.write_text(f"import pathlib\npathlib.Path({str(marker)!r}).write_text('ran')\n" + model.read_text())
    outcome = run(["runs", "verify", "runs/good", "--json"], cwd=finished, watched=(finished,))
    assert not marker.exists(), "verify imported model.py from the run folder"
    assert_refused(outcome, 1, "model.py", json_mode=True)


def test_a_copy_outside_its_project_reloads_only_with_trusted_code(finished, tmp_path):
    marker = tmp_path / "imported"
    copy = tmp_path / "elsewhere" / "good"
    shutil.copytree(finished / "runs/good", copy)
    model = copy / "model.py"
    model.write_text(f"import pathlib\npathlib.Path({str(marker)!r}).write_text('ran')\n" + model.read_text())
    edit_json(copy / "manifest.json", lambda m: m["sha256"].update({"model.py": sha256(model)}))
    alone = run(["runs", "verify", str(copy), "--json"], cwd=tmp_path, watched=(copy,))
    assert not marker.exists(), "verify imported the copy's model.py"
    assert_refused(alone, 1, "is not bundler's template model", "--project PROJECT", json_mode=True)
    with_project = run(["runs", "verify", str(copy), "--project", str(finished), "--json"], cwd=tmp_path, watched=(copy,))
    assert not marker.exists() and with_project.code == 0, with_project.stdout[-2000:]  # the project's own model reloads it


def test_an_edited_copy_of_the_inputs_is_named(finished):
    path = finished / "runs/good/inputs.json"
    path.write_text(path.read_text().replace("doc-01", "doc-99", 1))
    outcome = run(["runs", "verify", "runs/good", "--no-reload", "--json"], cwd=finished, watched=(finished,))
    assert_refused(outcome, 1, "not an accepted delivery", json_mode=True)
    assert "inputs.json" in " ".join(failed_checks(outcome).values())


def test_a_count_written_as_a_string_is_refused(finished):
    edit_json(finished / "runs/good/summary.json", lambda s: s.update(accepted="11"))
    outcome = run(["runs", "verify", "runs/good", "--no-reload", "--json"], cwd=finished, watched=(finished,))
    assert_refused(outcome, 1, "not an accepted delivery", json_mode=True)
    assert "accepted" in " ".join(failed_checks(outcome).values())


def test_sha256sums_listing_a_file_twice_is_refused(finished):
    assert run(["runs", "export", "runs/good", "../copy"], cwd=finished).code == 0
    sums = finished.parent / "copy/SHA256SUMS"
    first = sums.read_text().splitlines()[0]
    sums.write_text(sums.read_text() + first + "\n")
    outcome = run(["runs", "verify", str(finished.parent / "copy"), "--no-reload", "--json"], cwd=finished)
    assert outcome.code == 1 and "SHA256SUMS" in outcome.stdout + outcome.stderr


def test_an_export_destination_starting_with_a_dash_exports_a_valid_run(finished):
    outcome = run(["runs", "export", "runs/good", "--json", "--", "-copy"], cwd=finished)
    assert outcome.code == 0, outcome.stderr[-1500:]
    assert (finished / "-copy/manifest.json").is_file()


# -- the pilot's own resume: one process per run folder, the code it started with ---------------
@pytest.fixture
def killed(tmp_path_factory, tmp_path):
    return project_copy(tmp_path_factory, "killed", tmp_path)


def test_a_second_resume_of_a_running_pilot_run_is_refused(killed):
    first = subprocess.Popen(
        [sys.executable, str(FAULTS), "pause:3", "example", "--config", "config/pilot.json", "--resume", "cut"],
        cwd=killed,
        env={**os.environ, **pilot_env(killed)},
        stderr=subprocess.PIPE,
    )
    try:
        predictions = killed / "runs/cut/predictions.jsonl"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and len(predictions.read_bytes().splitlines() if predictions.exists() else []) < 2:
            time.sleep(0.05)
        second = run(pilot_argv("--resume", "cut"), cwd=killed, env=pilot_env(killed), watched=(killed / "runs",))
        assert_refused(second, 5, "is being written by another process", f"PID {first.pid}")
    finally:
        first.kill()
        first.wait(timeout=30)


def test_a_pilot_resume_after_the_model_changed_is_refused(killed):
    model = killed / "src/example/model.py"
    model.write_text(model.read_text() + "\n# retuned after the kill\n")
    outcome = run(pilot_argv("--resume", "cut"), cwd=killed, env=pilot_env(killed), watched=(killed / "runs",))
    assert_refused(outcome, 5, "model.py", "mix the predictions of two versions")


# -- links and secrets in an export ---------------------------------------------------------------
def test_export_never_copies_what_a_link_out_of_the_run_points_to(finished, tmp_path):
    secret = tmp_path / "token"
    secret.write_text("hf_secretsecretsecret\n")
    (finished / "runs/good/notes.txt").symlink_to(secret)
    outcome = run(["runs", "export", "runs/good", str(tmp_path / "out")], cwd=finished)
    copied = tmp_path / "out/notes.txt"
    assert not (copied.exists() and not copied.is_symlink() and "hf_secret" in copied.read_text())
    assert outcome.code != 0 or copied.is_symlink() or not copied.exists()
    if outcome.code != 0:
        assert "notes.txt" in outcome.stderr


@pytest.mark.parametrize("name", [".env", ".env.local", ".netrc", "id_rsa", ".git-credentials"])
def test_export_never_copies_a_secret_file(finished, tmp_path, name):
    (finished / "runs/good" / name).write_text("TOKEN=hf_secretsecretsecret\n")
    run(["runs", "export", "runs/good", str(tmp_path / "out")], cwd=finished)
    assert not (tmp_path / "out" / name).exists()


def test_a_run_folder_that_is_a_link_out_of_the_project_is_refused(finished, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    (finished / "runs/good").rename(elsewhere)
    (finished / "runs/good").symlink_to(elsewhere)
    outcome = run(["runs", "export", "runs/good", str(tmp_path / "out"), "--json"], cwd=finished, watched=(finished,))
    assert_refused(outcome, 3, "runs/good", json_mode=True)


def test_a_latest_link_does_not_count_a_run_twice(finished):
    (finished / "runs/latest").symlink_to("good")
    outcome = run(["runs", "summary", "--no-reload", "--json"], cwd=finished)
    assert outcome.code == 0, outcome.stderr[-1500:]
    assert [row["run_id"] for row in json.loads(outcome.stdout)["runs"]] == ["good"]


def test_sigterm_during_export_leaves_nothing(finished, tmp_path):
    big = finished / "runs/good/big.bin"
    big.write_bytes(os.urandom(1 << 20) * 200)  # 200 MB: the copy takes a while
    exports = tmp_path / "exports"
    exports.mkdir()
    dest = exports / "out"
    process = subprocess.Popen(
        [sys.executable, "-m", "bundler", "runs", "export", "runs/good", str(dest), "--no-reload"],
        cwd=finished,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not any(p.name.endswith(".partial") for p in exports.iterdir()):
        time.sleep(0.01)
    assert any(p.name.endswith(".partial") for p in exports.iterdir()), "the export never started copying"
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=60) != 0
    assert list(exports.iterdir()) == []
    assert not (finished / "runs/good/SHA256SUMS").exists()


# -- `bundler run`: any entry's evidence -----------------------------------------------------------
def test_bundler_run_gives_a_run_that_verify_accepts(tmp_path):
    project = adopted(tmp_path, "python train.py")
    outcome = run(["run", "--run-id", "one", "--json"], cwd=project)
    assert outcome.code == 0, outcome.stderr[-1500:]
    assert "trained" in outcome.stderr + outcome.stdout
    verify = run(["runs", "verify", "runs/one", "--json"], cwd=project)
    assert verify.code == 0, verify.stderr[-1500:]


def _edit_output(project):
    (project / "runs/one/out/metrics.json").write_text('{"loss": 0.01}')


def _forge_output_hash(project):
    """The output edited and its recorded size and SHA-256 rewritten to match."""
    _edit_output(project)
    metrics = project / "runs/one/out/metrics.json"

    def forge(manifest):
        for entry in manifest["outputs"]:
            if entry["path"].endswith("metrics.json"):
                entry["sha256"], entry["bytes"] = sha256(metrics), metrics.stat().st_size

    edit_json(project / "runs/one/manifest.json", forge)


def _relock(project):
    (project / "requirements-rebuild.txt").write_text("# another lock\n")


@pytest.mark.parametrize(
    "tamper, named",
    [(_edit_output, "out/metrics.json"), (_forge_output_hash, "manifest.json"), (_relock, "requirements-rebuild.txt")],
)
def test_a_run_changed_after_it_ended_is_named(tmp_path, tamper, named):
    project = adopted(tmp_path, "python train.py")
    assert run(["run", "--run-id", "one"], cwd=project).code == 0
    tamper(project)
    outcome = run(["runs", "verify", "runs/one", "--json"], cwd=project, watched=(project,))
    assert_refused(outcome, 1, "not an accepted delivery", named, json_mode=True)


def test_an_existing_run_id_is_refused(tmp_path):
    project = adopted(tmp_path, "python train.py")
    assert run(["run", "--run-id", "one"], cwd=project).code == 0
    outcome = run(["run", "--run-id", "one", "--json"], cwd=project, watched=(project,))
    assert_refused(outcome, 5, "one", json_mode=True)


def test_a_second_resume_of_a_running_run_is_refused(tmp_path):
    project = adopted(tmp_path, "python train.py")
    first = running_run(project, "one")
    try:
        outcome = run(["run", "--resume", "one", "--json"], cwd=project, watched=(project / "runs/one",))
        assert_refused(outcome, 5, str(first.pid), json_mode=True)
    finally:
        first.terminate()
        first.wait(timeout=30)


def test_a_killed_run_is_shown_as_killed(tmp_path):
    project = adopted(tmp_path, "python train.py")
    killed_run(project, "one")
    summary = run(["runs", "summary", "--json"], cwd=project)
    assert summary.code == 0, summary.stderr[-1500:]
    assert [(row["run_id"], row["status"]) for row in json.loads(summary.stdout)["runs"]] == [("one", "killed")]
    verify = run(["runs", "verify", "runs/one", "--json"], cwd=project)
    assert verify.code == 1


def test_a_resume_after_the_code_changed_is_refused(tmp_path):
    project = adopted(tmp_path, "python train.py")
    killed_run(project, "one")
    (project / "train.py").write_text((project / "train.py").read_text() + "# edited\n")
    outcome = run(["run", "--resume", "one", "--json"], cwd=project, watched=(project / "runs",))
    assert_refused(outcome, 5, "train.py", json_mode=True)
