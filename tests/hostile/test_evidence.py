"""Evidence: what a reviewer under another account can read, and what `runs verify` accepts.

A run is written with the permissions the umask allows, so a reviewer reads it under the
usual 022 and gets one clear error (exit 10) under a stricter one. `runs verify` refuses a
run whose scores are not numbers in [0, 1], whose texts or predictions were changed (every
accepted document is re-predicted), or whose reload script skips documents; `runs
summary` gives the same verdict, and outside a project it fails.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.hostile.harness import assert_refused, run
from tests.hostile.prepared import project_copy

NOBODY = 65534


def pilot_under_umask(project, run_id: str, umask: int) -> None:
    completed = subprocess.run(
        [sys.executable, "-m", "example.pilot", "--run-id", run_id],
        cwd=project,
        env={**os.environ, "PYTHONPATH": str(project / "src")},
        preexec_fn=lambda: os.umask(umask),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert completed.returncode == 0, completed.stderr


@pytest.fixture(scope="module")
def reviewed(tmp_path_factory):
    """One project, two runs: one made under umask 022, one under 077, both then owned by another account."""
    project = project_copy(tmp_path_factory, "fresh", tmp_path_factory.mktemp("umask"))
    for run_id, umask in (("usual", 0o022), ("strict", 0o077)):
        pilot_under_umask(project, run_id, umask)
        if os.geteuid() == 0:  # a reviewer's account: the files belong to someone else
            for path in [project / "runs" / run_id, *(project / "runs" / run_id).iterdir()]:
                os.chown(path, NOBODY, NOBODY)
    return project


@pytest.mark.parametrize("run_id, mode", [("usual", 0o644), ("strict", 0o600)])
def test_the_pilot_writes_with_the_permissions_the_umask_allows(reviewed, run_id, mode):
    modes = {path.name: path.stat().st_mode & 0o777 for path in (reviewed / "runs" / run_id).iterdir()}
    assert set(modes.values()) == {mode}, modes


def test_another_account_verifies_a_run_made_under_the_usual_umask(reviewed):
    outcome = run(["runs", "verify", "runs/usual", "--json"], cwd=reviewed, watched=(reviewed / "runs",), unprivileged=True)
    assert outcome.code == 0 and outcome.changed == [], outcome.stderr[-2000:]
    assert json.loads(outcome.stdout)["status"] == "accepted"


def test_another_account_summarizes_runs_made_under_the_usual_umask(reviewed):
    (reviewed / "runs/strict").rename(reviewed / "strict-aside")
    try:
        outcome = run(["runs", "summary", "--json"], cwd=reviewed, watched=(reviewed / "runs",), unprivileged=True)
    finally:
        (reviewed / "strict-aside").rename(reviewed / "runs/strict")
    assert outcome.code == 0 and outcome.changed == [], outcome.stderr[-2000:]
    assert [(row["run_id"], row["status"]) for row in json.loads(outcome.stdout)["runs"]] == [("usual", "accepted")]


@pytest.mark.parametrize("command", [["runs", "verify", "runs/strict"], ["runs", "summary"], ["runs", "export", "runs/strict", "copy"]])
def test_an_unreadable_run_is_a_clear_error(reviewed, command):
    outcome = run([*command, "--json"], cwd=reviewed, watched=(reviewed,), unprivileged=True)
    assert_refused(outcome, 10, "runs/strict", "Permission denied", json_mode=True)


# -- what verify accepts -------------------------------------------------------------------------
@pytest.fixture
def finished(tmp_path_factory, tmp_path):
    return project_copy(tmp_path_factory, "finished", tmp_path)


def rewrite_predictions(run_dir, index: int, line: str) -> None:
    lines = (run_dir / "predictions.jsonl").read_text().splitlines(keepends=True)
    lines[index] = line + "\n"
    (run_dir / "predictions.jsonl").write_text("".join(lines))


@pytest.mark.parametrize(
    "line, check, words",
    [
        ('{"id":"doc-02","category":"contract","score":NaN}', "files_complete", "predictions.jsonl:2 is not JSON"),
        ('{"id":"doc-02","category":"contract","score":Infinity}', "files_complete", "predictions.jsonl:2 is not JSON"),
        ('{"id":"doc-02","category":"contract","score":1e400}', "scores_valid", "doc-02: inf"),
        ('{"id":"doc-02","category":"contract","score":"0.41"}', "scores_valid", "doc-02: '0.41'"),
        ('{"id":"doc-02","category":"contract","score":1.5}', "scores_valid", "doc-02: 1.5"),
        ('{"id":"doc-02","category":"contract","score":-0.1}', "scores_valid", "doc-02: -0.1"),
        ('{"id":"doc-02","category":"contract","score":true}', "scores_valid", "doc-02: True"),
        ('{"id":"doc-02","category":"contract"}', "scores_valid", "doc-02: None"),
    ],
)
def test_verify_and_summary_refuse_a_score_that_is_not_one(finished, line, check, words):
    rewrite_predictions(finished / "runs/good", 1, line)
    verify = run(["runs", "verify", "runs/good", "--no-reload", "--json"], cwd=finished, watched=(finished,))
    assert_refused(verify, 1, "not an accepted delivery (failed)", json_mode=True)
    failed = {c["name"]: c["detail"] for c in json.loads(verify.stdout)["checks"] if not c["ok"]}
    assert words in failed[check], failed
    summary = run(["runs", "summary", "--no-reload", "--json"], cwd=finished, watched=(finished,))
    assert summary.code == 0 and json.loads(summary.stdout)["runs"][0]["status"] == "failed"


def _swap_two_categories(run_dir):
    for index in (2, 9):  # doc-03 and doc-10: both still allowed categories
        record = json.loads((run_dir / "predictions.jsonl").read_text().splitlines()[index])
        rewrite_predictions(run_dir, index, json.dumps(record | {"category": "research_abstract"}))


def _change_a_text(run_dir):
    texts = json.loads((run_dir / "texts.json").read_text())
    texts["documents"][4]["text"] += " and one more sentence"
    (run_dir / "texts.json").write_text(json.dumps(texts))


def _drop_a_text(run_dir):
    texts = json.loads((run_dir / "texts.json").read_text())
    del texts["documents"][6]
    (run_dir / "texts.json").write_text(json.dumps(texts))


def _reload_that_skips_everything(run_dir):
    (run_dir / "reload.py").write_text('import json\nprint(json.dumps({"ok": True, "predicted": [], "problems": []}))\n')


def _record_hashes_again(run_dir):
    """The forger's next step: the manifest's recorded SHA-256 rewritten to match the tampered files."""
    from bundler.fsutil import sha256_file

    manifest = json.loads((run_dir / "manifest.json").read_text())
    manifest["sha256"] = {name: sha256_file(run_dir / name) for name in manifest["sha256"]}
    (run_dir / "manifest.json").write_text(json.dumps(manifest))


@pytest.mark.parametrize(
    "tamper, changed, words",
    [
        (_swap_two_categories, "predictions.jsonl", "doc-03: reloaded model says"),
        (_change_a_text, "texts.json", "doc-05: its text in texts.json is not the input's"),
        (_drop_a_text, "texts.json", "doc-07: stored prediction not re-predicted"),
        (_reload_that_skips_everything, "reload.py", "re-predicted all 11 accepted documents"),
    ],
)
def test_every_accepted_document_is_re_predicted_by_verify_and_summary(finished, tamper, changed, words):
    tamper(finished / "runs/good")
    verify = run(["runs", "verify", "runs/good", "--json"], cwd=finished, watched=(finished,))
    assert_refused(verify, 1, f"recorded_hashes: {changed} differs from the SHA-256 the manifest records", json_mode=True)
    _record_hashes_again(finished / "runs/good")  # the project's own reload code still re-predicts every document
    verify = run(["runs", "verify", "runs/good", "--json"], cwd=finished, watched=(finished,))
    reload = next(c for c in json.loads(verify.stdout)["checks"] if c["name"] == "checkpoint_reload")
    assert words in reload["detail"]
    summary = run(["runs", "summary", "--json"], cwd=finished, watched=(finished,))
    row = json.loads(summary.stdout)["runs"][0]
    if changed == "reload.py":  # the run's own reload.py is never run: its edit changes nothing but the run
        assert verify.code == 0 and row["status"] == "accepted", verify.stdout[-2000:]
    else:
        assert_refused(verify, 1, "checkpoint_reload", json_mode=True)
        assert summary.code == 0 and row["status"] == "failed" and any(words in reason for reason in row["reasons"])


@pytest.mark.parametrize("where", ["empty", "missing"])
@pytest.mark.parametrize("command", [["runs", "summary"], ["runs", "decide", "good", "--decision", "launch", "--why", "x", "--project"]])
def test_runs_commands_outside_a_project_fail(tmp_path, where, command):
    folder = tmp_path / where
    if where != "missing":
        folder.mkdir()
    code, words = (2, "does not exist") if where == "missing" else (3, "is not a pilot project or a bundler project")
    outcome = run([*command, str(folder), "--json"], cwd=tmp_path, watched=(tmp_path,))
    assert_refused(outcome, code, words, json_mode=True)
