"""`bundler run`: any entry's run with its evidence, through the real CLI.

The entry's output is tee'd (terminal and bounded logs), its exit status and signal are
bundler's, its parameter files and [inputs] are hashed (the parameters copied), every output
is recorded; verify, summary and export accept these runs; a killed run is marked killed, a
resume is refused when the code, lock, parameters or inputs changed and runs when nothing did.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
from pathlib import Path

from bundler.fsutil import sha256_file
from tests.conftest import scaffold_project
from tests.hostile.harness import assert_refused, run
from tests.runs_support import adopted, killed_run, running_run

PY = shlex.quote(sys.executable)


def manifest_of(project: Path, run_id: str) -> dict:
    return json.loads((project / "runs" / run_id / "manifest.json").read_text())


def test_a_run_records_the_command_code_lock_parameters_inputs_and_outputs(tmp_path):
    project = adopted(tmp_path, f"{PY} train.py --config conf/train.yaml", '\n[inputs]\ntrain = "data"\n')
    (project / "conf").mkdir()
    (project / "conf/train.yaml").write_text("lr: 0.1\n")
    (project / "data").mkdir()
    (project / "data/train.csv").write_text("a,b\n1,2\n")
    outcome = run(["run", "--run-id", "one"], cwd=project)
    assert outcome.code == 0, outcome.stderr[-2000:]
    assert "trained" in outcome.stdout  # tee'd: the user still sees the entry's output
    manifest = manifest_of(project, "one")
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=project, capture_output=True, text=True).stdout.strip()
    assert manifest["kind"] == "entry" and manifest["status"] == "finished" and manifest["exit_code"] == 0
    assert manifest["command"]["argv"][-1] == f"{PY} train.py --config conf/train.yaml"
    untracked = {name: sha256_file(project / name) for name in ("conf/train.yaml", "data/train.csv")}
    assert manifest["code"]["revision"] == head and manifest["code"]["files"] == untracked
    assert manifest["lock"] == {"path": "requirements-rebuild.txt", "sha256": sha256_file(project / "requirements-rebuild.txt")}
    assert manifest["target"]["backend"] == "cpu" and manifest["image"]["inside_bundle_image"] is False
    assert [(p["path"], p["copy"]) for p in manifest["params"]] == [("conf/train.yaml", "params/conf/train.yaml")]
    assert (project / "runs/one/params/conf/train.yaml").read_text() == "lr: 0.1\n"
    assert [(i["name"], i["path"], i["files"]) for i in manifest["inputs"]] == [("train", "data", 1)]
    assert manifest["outputs"] == [{"path": "metrics.json", "bytes": 13, "sha256": sha256_file(project / "runs/one/out/metrics.json")}]
    assert (project / "runs/one/stdout.log").read_text() == "trained\n"
    verify = run(["runs", "verify", "runs/one", "--json"], cwd=project)
    assert verify.code == 0 and json.loads(verify.stdout)["status"] == "accepted", verify.stdout[-2000:]


def test_a_run_of_a_generated_project_runs_its_entry(tmp_path):
    project = scaffold_project(tmp_path / "example")
    env = {"PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}  # `python` of the entry
    outcome = run(["run", "--run-id", "entry", "--json"], cwd=project, env=env)
    assert outcome.code == 0, outcome.stderr[-2000:]
    document = json.loads(outcome.stdout)  # the entry's own output went to stderr: stdout is one JSON document
    assert document["ok"] and document["run_id"] == "entry"
    manifest = manifest_of(project, "entry")
    assert [p["path"] for p in manifest["params"]] == ["config/pilot.json"]
    summary = run(["runs", "summary", "--no-reload", "--json"], cwd=project)
    rows = {row["run_id"]: row["status"] for row in json.loads(summary.stdout)["runs"]}
    assert rows.pop("entry") == "accepted" and list(rows.values()) == ["accepted"], rows  # and the pilot's own run


def test_the_entrys_exit_status_is_bundlers_and_verify_names_it(tmp_path):
    project = adopted(tmp_path, f"{PY} -c 'import sys; print(\"bad\", file=sys.stderr); sys.exit(3)'")
    outcome = run(["run", "--run-id", "bad", "--json"], cwd=project)
    assert outcome.code == 3 and json.loads(outcome.stdout)["exit_code"] == 3
    assert "bad" in outcome.stderr and (project / "runs/bad/stderr.log").read_text() == "bad\n"
    verify = run(["runs", "verify", "runs/bad", "--json"], cwd=project, watched=(project,))
    assert_refused(verify, 1, "the entry exited with status 3", json_mode=True)


def test_a_command_after_the_separator_replaces_the_entry(tmp_path):
    project = adopted(tmp_path, "false")
    outcome = run(["run", str(project), "--run-id", "cmd", "--", sys.executable, "train.py", "--json"], cwd=tmp_path)
    assert outcome.code == 0, outcome.stderr[-2000:]
    assert manifest_of(project, "cmd")["command"] == {"argv": [sys.executable, "train.py", "--json"], "from": "command line"}


def test_signals_are_forwarded_and_the_signal_recorded(tmp_path):
    project = adopted(tmp_path, f"{PY} train.py")
    process = running_run(project, "cut")
    process.send_signal(signal.SIGTERM)  # to bundler only: it forwards to the entry's process group
    assert process.wait(timeout=30) == 128 + signal.SIGTERM
    manifest = manifest_of(project, "cut")
    assert manifest["status"] == "finished" and manifest["signal"] == "SIGTERM" and manifest["exit_code"] is None
    verify = run(["runs", "verify", "runs/cut", "--json"], cwd=project)
    assert verify.code == 1 and "ended by SIGTERM" in verify.stderr


def test_a_killed_run_is_marked_on_the_next_run_and_resumes_when_nothing_changed(tmp_path):
    project = adopted(tmp_path, f"{PY} train.py")
    pid = killed_run(project, "one")
    assert manifest_of(project, "one")["status"] == "running"  # what the killed process left
    second = run(["run", "--run-id", "two"], cwd=project)
    assert second.code == 0 and "Run one was killed" in second.stderr, second.stderr[-2000:]
    marked = manifest_of(project, "one")
    assert marked["status"] == "killed" and f"PID {pid}" in marked["killed_holder"]
    resumed = run(["run", "--resume", "one", "--json"], cwd=project)
    assert resumed.code == 0, resumed.stderr[-2000:]
    manifest = manifest_of(project, "one")
    assert manifest["status"] == "finished" and len(manifest["attempts"]) == 2
    assert manifest["attempts"][0]["finished"].startswith("killed")
    assert run(["runs", "verify", "runs/one"], cwd=project).code == 0


def test_a_resume_after_an_input_or_the_lock_changed_is_refused(tmp_path):
    project = adopted(tmp_path, f"{PY} -c 'import sys; sys.exit(1)'", '\n[inputs]\ntrain = "train.csv"\n')
    (project / "train.csv").write_text("1\n")
    assert run(["run", "--run-id", "one"], cwd=project).code == 1
    (project / "train.csv").write_text("2\n")
    outcome = run(["run", "--resume", "one", "--json"], cwd=project, watched=(project / "runs",))
    assert_refused(outcome, 5, "train.csv", json_mode=True)
    (project / "train.csv").write_text("1\n")
    (project / "requirements-rebuild.txt").write_text("# relocked\n")
    outcome = run(["run", "--resume", "one", "--json"], cwd=project, watched=(project / "runs",))
    assert_refused(outcome, 5, "requirements-rebuild.txt", json_mode=True)


def test_uncommitted_changes_are_recorded_and_a_later_difference_named(tmp_path):
    project = adopted(tmp_path, f"{PY} train.py")
    original = (project / "train.py").read_text()
    (project / "train.py").write_text(original + "# tuned\n")
    assert run(["run", "--run-id", "dirty"], cwd=project).code == 0
    assert list(manifest_of(project, "dirty")["code"]["files"]) == ["train.py"]
    (project / "train.py").write_text(original)
    verify = run(["runs", "verify", "runs/dirty", "--json"], cwd=project, watched=(project,))
    assert_refused(verify, 1, "files differ from the run's code: train.py", json_mode=True)


def test_an_export_of_a_run_verifies_the_copy(tmp_path):
    project = adopted(tmp_path, f"{PY} train.py")
    assert run(["run", "--run-id", "one"], cwd=project).code == 0
    outcome = run(["runs", "export", "runs/one", str(tmp_path / "copy"), "--json"], cwd=project)
    assert outcome.code == 0, outcome.stderr[-2000:]
    checks = {c["name"]: c for c in json.loads(outcome.stdout)["verify"]["checks"]}
    assert checks["outputs"]["ok"] and checks["project"]["ok"] and checks["checksums"]["ok"]


def test_refusals_before_anything_is_written(tmp_path):
    project = adopted(tmp_path, f"{PY} train.py")
    assert_refused(run(["run", "--", "no-such-program-here"], cwd=project, watched=(project,)), 2, "no-such-program-here")
    assert_refused(run(["run", "--run-id", "../x"], cwd=project, watched=(project,)), 2, "'../x' is not a run ID")
    assert_refused(run(["run", "--resume", "nothing"], cwd=project, watched=(project,)), 2, "no run nothing")
    with (project / "bundle.toml").open("a") as handle:
        handle.write('\n[inputs]\ntrain = "/etc/passwd"\n')
    assert_refused(run(["run"], cwd=project, watched=(project,)), 3, "[inputs] train = '/etc/passwd' is not a path inside the project")


def test_a_run_is_held_by_one_process_and_a_complete_one_never_resumed(tmp_path):
    project = adopted(tmp_path, f"{PY} train.py")
    process = running_run(project, "one")
    try:
        holder = json.loads((project / "runs/one/.lock").read_text())
        assert holder["pid"] == process.pid
        summary = run(["runs", "summary", "--json"], cwd=project)
        assert [row["status"] for row in json.loads(summary.stdout)["runs"]] == ["running"]
    finally:
        process.terminate()
        process.wait(timeout=30)
    outcome = run(["run", "--run-id", "two"], cwd=project)
    assert outcome.code == 0
    assert_refused(run(["run", "--resume", "two"], cwd=project, watched=(project / "runs",)), 5, "run two is finished")
