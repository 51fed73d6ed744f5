"""An adversarial round of classes the earlier rounds did not name, written before reading the
code that handles them: special files where a regular one is expected (a FIFO would hang a
reader, a folder, a device), project files that are links out of the project, hostile
environment variables, arguments at the edges of the command line, output files that cannot
be written, signals during a command, and encodings a file may come in.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.hostile.harness import assert_refused, run
from tests.hostile.prepared import project_copy


@pytest.fixture
def fresh(tmp_path_factory, tmp_path):
    return project_copy(tmp_path_factory, "fresh", tmp_path)


@pytest.fixture
def finished(tmp_path_factory, tmp_path):
    return project_copy(tmp_path_factory, "finished", tmp_path)


def clean(outcome, codes: tuple[int, ...]) -> str:
    """No traceback, an expected exit code, and on failure one paragraph with a hint."""
    text = outcome.stdout + outcome.stderr
    assert "Traceback" not in text, text[-3000:]
    assert outcome.code in codes, f"exit {outcome.code}, expected one of {codes}:\n{text[-2000:]}"
    if outcome.code not in (0, 1):
        errors = [line for line in outcome.stderr.splitlines() if line.startswith("Error: ")]
        assert len(errors) == 1 and " Hint: " in errors[0], outcome.stderr[-2000:]
    return text


# --- special files where a regular file is expected (a FIFO must never hang a reader) ---


@pytest.mark.parametrize(
    "where, argv",
    [
        ("config/pilot.json", ["check"]),
        ("bundle.toml", ["check"]),
        ("plan.toml", ["plan"]),
        ("catalog.toml", ["plan"]),
        ("requirements.in", ["lock", "--dry-run"]),
    ],
)
def test_a_fifo_in_place_of_a_project_file_is_refused_not_waited_on(fresh, where, argv):
    target = fresh / where
    target.unlink()
    os.mkfifo(target)
    outcome = run(argv, cwd=fresh, timeout=60)
    text = clean(outcome, (1, 3, 10))
    assert Path(where).name in text


def test_a_fifo_among_the_project_files_does_not_hang_paths(fresh):
    os.mkfifo(fresh / "src" / "pipe")
    clean(run(["paths"], cwd=fresh, timeout=60), (0, 1, 21))


def test_a_fifo_in_a_run_does_not_hang_export(finished, tmp_path):
    os.mkfifo(finished / "runs/good/pipe")
    clean(run(["runs", "export", "runs/good", str(tmp_path / "copy"), "--no-reload"], cwd=finished, timeout=60), (0, 1, 3, 10))


def test_a_fifo_in_a_run_does_not_hang_verify(finished):
    os.mkfifo(finished / "runs/good/pipe")
    clean(run(["runs", "verify", "runs/good", "--no-reload"], cwd=finished, timeout=60), (0, 1))


@pytest.mark.parametrize("where", ["bundle.toml", "config/pilot.json", "plan.toml"])
def test_a_folder_in_place_of_a_project_file(fresh, where):
    target = fresh / where
    target.unlink()
    target.mkdir()
    text = clean(run(["plan"] if where == "plan.toml" else ["check"], cwd=fresh), (1, 3, 10))
    assert Path(where).name in text


# --- project files that are links out of the project ---


@pytest.mark.parametrize("where", ["requirements.in", "config/pilot.json", "catalog.toml"])
def test_a_project_file_linked_out_of_the_project_is_not_read(fresh, tmp_path, where):
    outside = tmp_path / "outside-secret.txt"
    outside.write_text("aws_secret_access_key = AKIAOUTSIDE0000000000\n")
    target = fresh / where
    target.unlink()
    target.symlink_to(outside)
    argv = {"requirements.in": ["lock", "--dry-run"], "config/pilot.json": ["check"], "catalog.toml": ["plan"]}[where]
    outcome = run(argv, cwd=fresh)
    text = clean(outcome, (1, 3))
    assert "AKIAOUTSIDE" not in text
    assert Path(where).name in text


def test_a_job_output_linked_out_of_the_project_is_not_written_through(finished, tmp_path):
    outside = tmp_path / "victim.txt"
    outside.write_text("mine\n")
    (finished / "job-sky.yaml").symlink_to(outside)
    outcome = run(["job", "sky", "--image", "registry.example.com/a/b:1"], cwd=finished)
    clean(outcome, (3, 5, 6))
    assert outside.read_text() == "mine\n"


def test_runs_folder_linked_out_of_the_project(finished, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    (finished / "runs").rename(elsewhere)
    (finished / "runs").symlink_to(elsewhere)
    text = clean(run(["runs", "summary", "--no-reload"], cwd=finished), (0, 1, 3))
    assert "runs" in text


# --- hostile environment variables ---


@pytest.mark.parametrize(
    "name, value",
    [
        ("BUNDLER_INDEX_MAP", "https://download.pytorch.org/whl=file:///x\nhttps://pypi.org/simple"),
        ("BUNDLER_INDEX_MAP", "=="),
        ("BUNDLER_COMPAT", "/nonexistent/compat.toml"),
        ("BUNDLER_COMPAT", "/"),
    ],
)
def test_hostile_environment_for_lock_dry_run(fresh, name, value):
    outcome = run(["lock", "--dry-run"], cwd=fresh, env={name: value})
    text = clean(outcome, (0, 2, 3))
    if outcome.code != 0:
        assert name in text


def test_a_compat_file_that_is_not_toml(fresh, tmp_path):
    bad = tmp_path / "compat.toml"
    bad.write_text("[torch\n")
    text = clean(run(["lock", "--dry-run"], cwd=fresh, env={"BUNDLER_COMPAT": str(bad)}), (3,))
    assert "compat.toml" in text


def test_home_unset(fresh):
    env = {key: value for key, value in os.environ.items() if key != "HOME"}
    completed = subprocess.run([sys.executable, "-m", "bundler", "check"], cwd=fresh, env=env, capture_output=True, text=True, timeout=120)
    assert "Traceback" not in completed.stderr, completed.stderr[-3000:]
    assert completed.returncode in (0, 1)


def test_tmpdir_that_does_not_exist(tmp_path):
    outcome = run(["new", "example", "--no-input"], cwd=tmp_path, env={"TMPDIR": str(tmp_path / "missing")})
    clean(outcome, (0, 10))
    if outcome.code != 0:
        assert "TMPDIR" in outcome.stderr or "missing" in outcome.stderr


def test_a_one_column_terminal_still_prints_the_plan(fresh):
    text = clean(run(["plan"], cwd=fresh, env={"COLUMNS": "1"}), (0,))
    assert "RTX" in text


def test_c_locale_with_a_non_ascii_project_path(tmp_path):
    folder = tmp_path / "Ñandú projects"
    folder.mkdir()
    outcome = run(["new", "pilot", "--no-input"], cwd=folder, env={"LANG": "C", "LC_ALL": "C", "PYTHONIOENCODING": ""})
    clean(outcome, (0,))
    assert (folder / "pilot" / "bundle.toml").is_file()


# --- arguments at the edges ---


def test_new_with_an_empty_destination(tmp_path):
    assert_refused(run(["new", "", "--no-input"], cwd=tmp_path, watched=(tmp_path,)), 2, "Hint")


def test_a_rationale_of_a_hundred_thousand_characters(finished):
    clean(run(["runs", "decide", "good", "--decision", "launch", "--why", "x" * 100_000], cwd=finished), (0, 2))
    clean(run(["runs", "summary", "--no-reload"], cwd=finished), (0,))


@pytest.mark.parametrize("why", ["\n", "\u2028", "\t \r"])
def test_a_rationale_of_only_line_breaks_is_no_rationale(finished, why):
    outcome = run(["runs", "decide", "good", "--decision", "launch", "--why", why], cwd=finished, watched=(finished,))
    assert_refused(outcome, 2, "rationale")


def test_a_rationale_with_a_line_separator_stays_one_record(finished):
    clean(run(["runs", "decide", "good", "--decision", "launch", "--why", "first\u2028second\nthird"], cwd=finished), (0,))
    lines = (finished / "runs/good/decisions.jsonl").read_bytes().split(b"\n")
    records = [json.loads(line) for line in lines if line.strip()]
    assert len(records) == 1 and "second" in records[0]["why"]


def test_a_project_argument_that_looks_like_an_option(tmp_path):
    folder = tmp_path / "-x"
    folder.mkdir()
    clean(run(["check", "--", "-x"], cwd=tmp_path), (3,))


@pytest.mark.parametrize("run_id", ["ün", "a b", "a" * 300, ".hidden", "CON"])
def test_run_ids_that_are_odd_folder_names(finished, run_id):
    outcome = run(["runs", "decide", run_id, "--decision", "launch", "--why", "x"], cwd=finished, watched=(finished,))
    clean(outcome, (2, 3, 10))


# --- output files that cannot be written ---


@pytest.fixture
def dev_full():
    """/dev/full, checked to still be the device afterwards (a rename over it would replace it for the whole machine)."""
    import stat

    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)
    yield Path("/dev/full")
    assert stat.S_ISCHR(os.lstat("/dev/full").st_mode), "/dev/full was replaced by a file"


def test_diagnostics_json_to_a_full_device(fresh, dev_full):
    outcome = run([sys.executable, "diagnostics/run.py", "--json", "/dev/full"], cwd=fresh, timeout=300)
    text = outcome.stdout + outcome.stderr
    assert "Traceback" not in text, text[-3000:]
    assert outcome.code != 0 and "/dev/full" in text


def test_a_job_written_to_a_full_device_fails_and_leaves_the_device(tmp_path_factory, fake_index, tmp_path, dev_full):
    from tests.job_support import copy_project, locked_project

    project = copy_project(locked_project(tmp_path_factory, fake_index, "cpu"), tmp_path / "locked")
    outcome = run(["job", "k8s", "--image", "registry.example.com/a/b:1", "-o", str(dev_full)], cwd=project)
    text = clean(outcome, (2, 5, 10))
    assert "/dev/full" in text


def test_diagnostics_report_into_a_missing_folder(fresh, tmp_path):
    outcome = run([sys.executable, "diagnostics/run.py", "--report", str(tmp_path / "no" / "such" / "r.html")], cwd=fresh, timeout=300)
    text = outcome.stdout + outcome.stderr
    assert "Traceback" not in text, text[-3000:]
    assert outcome.code == 0 and (tmp_path / "no/such/r.html").is_file() or "no/such" in text


def test_diagnostics_with_an_unknown_backend(fresh):
    outcome = run([sys.executable, "diagnostics/run.py", "--backend", "tpu"], cwd=fresh, timeout=120)
    assert "Traceback" not in outcome.stderr and outcome.code == 2 and "tpu" in outcome.stderr


def test_job_output_into_a_folder(finished):
    (finished / "jobs").mkdir()
    outcome = run(["job", "k8s", "--image", "registry.example.com/a/b:1", "-o", "jobs"], cwd=finished, watched=(finished / "jobs",))
    clean(outcome, (2, 3, 5, 6, 10))


def test_export_into_the_run_itself(finished):
    outcome = run(["runs", "export", "runs/good", "runs/good/copy", "--no-reload"], cwd=finished, watched=(finished / "runs",))
    assert_refused(outcome, 2 if outcome.code == 2 else 5, "runs/good")


# --- signals during a command ---


def _interrupted(argv: list[str], cwd: Path, after: float, sig: int) -> subprocess.CompletedProcess:
    process = subprocess.Popen([sys.executable, "-m", "bundler", *argv], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(after)
    process.send_signal(sig)
    stdout, stderr = process.communicate(timeout=60)
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_a_signal_during_new_leaves_nothing(tmp_path, sig):
    completed = _interrupted(["new", "example", "--no-input"], tmp_path, 0.8, sig)
    assert "Traceback" not in completed.stderr, completed.stderr[-3000:]
    leftovers = sorted(p.name for p in tmp_path.iterdir())
    assert leftovers in ([], ["example"]), leftovers
    if leftovers:  # the signal came after the project was in place: it is whole
        assert (tmp_path / "example/.bundler-answers.json").is_file()
    else:
        assert completed.returncode == 128 + sig, completed.returncode


# --- encodings and line endings of inputs ---


def test_requirements_in_with_a_byte_order_mark(fresh):
    path = fresh / "requirements.in"
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    clean(run(["lock", "--dry-run"], cwd=fresh), (0,))


def test_bundle_toml_with_a_byte_order_mark(fresh):
    path = fresh / "bundle.toml"
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    clean(run(["lock", "--dry-run"], cwd=fresh), (0, 3))


def test_requirements_in_in_utf16(fresh):
    path = fresh / "requirements.in"
    path.write_bytes(path.read_text().encode("utf-16"))
    text = clean(run(["lock", "--dry-run"], cwd=fresh), (3,))
    assert "requirements.in" in text


def test_requirements_in_with_a_nul_byte(fresh):
    path = fresh / "requirements.in"
    path.write_bytes(path.read_bytes() + b"numpy\x00==1\n")
    text = clean(run(["lock", "--dry-run"], cwd=fresh), (3, 6))
    assert "requirements.in" in text


def test_an_entry_with_shell_metacharacters_stays_words_in_the_sbatch_script(tmp_path_factory, fake_index, tmp_path):
    from tests.job_support import copy_project, locked_project

    finished = copy_project(locked_project(tmp_path_factory, fake_index, "cpu"), tmp_path / "locked")
    bundle = finished / "bundle.toml"
    text = bundle.read_text()
    start = text.index("entry = ")
    end = text.index("\n", start)
    bundle.write_text(text[:start] + "entry = \"python -m example.pilot --config 'a;b' $(touch /tmp/pwned-by-entry)\"" + text[end:])
    outcome = run(["job", "slurm", "--image", "registry.example.com/a/b:1"], cwd=finished)
    clean(outcome, (0, 2, 3))
    if outcome.code == 0:
        script = (finished / "job-slurm.sbatch").read_text()
        spots = [index for index in range(len(script)) if script.startswith("$(touch", index)]
        assert spots and all(script[index - 1] == "'" for index in spots), script
