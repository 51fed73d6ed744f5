"""Filesystem errors, for real: read-only folders, unwritable parents, names too long, links and
files where a folder is expected, folders that take no new entries (/proc, /sys). Each one is
exit 10 (or 5 for something that exists) with one paragraph naming the path, and nothing left behind.
"""

from __future__ import annotations

import pytest

from tests.hostile.harness import assert_refused, run
from tests.hostile.prepared import pilot_argv, pilot_env, project_copy, read_only, writable_again

LONG = "a" * 300  # above NAME_MAX (255) of every Linux file system


@pytest.fixture
def base(tmp_path):
    yield tmp_path
    writable_again(tmp_path)


@pytest.fixture
def finished(tmp_path_factory, base):
    return project_copy(tmp_path_factory, "finished", base)


# -- bundler new ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "dest, code, words",
    [
        ("ro/new", 10, "Permission denied"),  # a parent that cannot be written
        ("ro/deeper/new", 10, "Permission denied"),  # a missing folder below it
        (f"{LONG}", 10, "File name too long"),
        (f"deep/{LONG}/x", 10, "File name too long"),
        ("afile/sub", 10, "is a file, not a folder"),
        ("afile/sub/deeper", 10, "is a file, not a folder"),
        ("afile", 5, "is a file"),
        ("dangling", 5, "is a symbolic link"),
        ("linked", 5, "is a symbolic link"),
        ("full", 5, "not empty"),
        ("/proc/bundler-hostile", 10, "does not accept new folders"),
        ("/proc/self/bundler-hostile", 10, "does not accept new folders"),
        ("/sys/bundler-hostile", 10, "/sys/bundler-hostile"),
    ],
)
@pytest.mark.parametrize("json_mode", [False, True], ids=["text", "json"])
def test_new_refuses_a_destination_it_cannot_make(base, dest, code, words, json_mode):
    (base / "ro").mkdir()
    read_only(base / "ro")
    (base / "afile").write_text("a file\n")
    (base / "dangling").symlink_to(base / "nowhere")
    (base / "empty").mkdir()
    (base / "linked").symlink_to(base / "empty")
    (base / "full").mkdir()
    (base / "full" / "thesis.tex").write_text("years of work\n")
    argv = ["new", dest, "--no-input", "--name", "x", "--set", "project_slug=x", *(["--json"] if json_mode else [])]
    outcome = run(argv, cwd=base, watched=(base,), unprivileged=True)
    assert_refused(outcome, code, words, json_mode=json_mode)


# -- bundler runs export / decide / verify / summary ---------------------------------------------
@pytest.mark.parametrize(
    "dest, code, words",
    [
        ("/proc/bundler-export", 10, "does not accept new folders"),
        ("afile", 5, "already exists"),
        ("dangling", 5, "already exists"),
        ("afile/copy", 10, "is a file, not a folder"),
        (LONG, 10, "File name too long"),
        ("ro/copy", 10, "Permission denied"),
    ],
)
def test_export_to_a_destination_it_cannot_make_changes_nothing(finished, base, dest, code, words):
    (base / "afile").write_text("a file\n")
    (base / "dangling").symlink_to(base / "nowhere")
    (base / "ro").mkdir()
    read_only(base / "ro")
    outcome = run(["runs", "export", str(finished / "runs/good"), dest, "--no-reload"], cwd=base, watched=(base,), unprivileged=True)
    assert_refused(outcome, code, words)


def test_export_of_a_read_only_run_folder_writes_nothing_anywhere(finished, base):
    read_only(finished / "runs/good")
    outcome = run(["runs", "export", str(finished / "runs/good"), "copy", "--no-reload"], cwd=base, watched=(base,), unprivileged=True)
    assert_refused(outcome, 10, "SHA256SUMS", "Permission denied")


@pytest.mark.parametrize("json_mode", [False, True], ids=["text", "json"])
def test_decide_on_a_read_only_run_folder(finished, json_mode):
    read_only(finished / "runs/good")
    argv = ["runs", "decide", "good", "--decision", "launch", "--why", "fine", "--project", str(finished)]
    outcome = run([*argv, *(["--json"] if json_mode else [])], cwd=finished, watched=(finished,), unprivileged=True)
    assert_refused(outcome, 10, "decisions.jsonl", "Permission denied", json_mode=json_mode)


@pytest.mark.parametrize(
    "command, unreadable",
    [
        (["runs", "verify", "runs/good", "--no-reload"], "runs/good/manifest.json"),
        (["runs", "verify", "runs/good", "--no-reload"], "runs/good/summary.json"),
        (["runs", "summary", "--no-reload"], "runs/good/manifest.json"),
        (["runs", "summary", "--no-reload"], "config/pilot.json"),
        (["plan"], "plan.toml"),
        (["plan"], "catalog.toml"),
        (["check"], "config/pilot.json"),
        (["lock", "--cpu", "--dry-run"], "bundle.toml"),
        (["diagnose", "--local"], "bundle.toml"),
    ],
)
def test_an_unreadable_file_is_named(finished, command, unreadable):
    (finished / unreadable).chmod(0)
    outcome = run(command, cwd=finished, watched=(finished,), unprivileged=True)
    assert_refused(outcome, 10, unreadable.rsplit("/", 1)[-1], "Permission denied")


# -- the generated pilot ------------------------------------------------------------------------
def test_pilot_into_a_read_only_runs_folder(finished):
    read_only(finished / "runs")
    outcome = run(pilot_argv("--run-id", "new"), cwd=finished, env=pilot_env(finished), watched=(finished,), unprivileged=True)
    assert_refused(outcome, 10, "runs/new", "Permission denied")


def test_pilot_with_an_unreadable_configuration(finished):
    (finished / "config/pilot.json").chmod(0)
    outcome = run(pilot_argv("--run-id", "new"), cwd=finished, env=pilot_env(finished), watched=(finished,), unprivileged=True)
    assert_refused(outcome, 10, "pilot.json", "Permission denied")
