"""Hostile input to `python diagnostics/run.py`: bad flags and unusable folders or report files
exit 2 with one line naming them; a plan.toml or catalog the diagnostics cannot use fails stage 1
(exit 11) naming the file. Never a traceback, never a file written or left behind."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from tests.hostile.harness import Outcome, assert_refused, run

RUN_PY = str(Path(__file__).resolve().parents[2] / "diagnostics" / "run.py")
BUNDLE = (
    '[project]\nname = "P"\npackage = "p"\nentry = "python -m p"\n'
    '[target]\nbackend = "cpu"\naccelerator = ""\ntorch = "2.13.0"\npython = "3.11"\n'
)
PLAN = '[package]\ncard = "{card}"\ndays = 3\nlots = {lots}\n'
CATALOG = '[cards."H200"]\ncards_per_lot = 1\nmemory_gb = 141\n\n[cards."B200"]\ncards_per_lot = 2\nmemory_gb = 180\n'


def diagnostics(*args: str, cwd: Path, watched: tuple = (), unprivileged: bool = False) -> Outcome:
    """run.py in a fresh interpreter; ``unprivileged``: as root without the capabilities that
    bypass file permissions, so that a folder's mode is obeyed."""
    argv = [sys.executable, RUN_PY, *args]
    if unprivileged:
        caps = "-dac_override,-dac_read_search"
        argv = [
            sys.executable,
            "-c",
            "import os, sys; os.execvp('setpriv', sys.argv[1:])",
            "setpriv",
            f"--bounding-set={caps}",
            f"--inh-caps={caps}",
            *argv,
        ]
    return run(argv, cwd=cwd, watched=watched)


def project(folder: Path, plan: str | None = None, catalog: str = CATALOG) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "bundle.toml").write_text(BUNDLE)
    if plan is not None:
        (folder / "plan.toml").write_text(plan)
        (folder / "catalog.toml").write_text(catalog)
    return folder


# --- bad usage: exit 2 before any stage ---------------------------------------------------------------


def _missing(tmp):
    return ["--project", str(tmp / "no-such-folder")], ["no-such-folder", "does not exist"]


def _a_file(tmp):
    (tmp / "afile").write_text("x")
    return ["--project", str(tmp / "afile")], ["afile", "is not a folder"]


def _no_bundle(tmp):
    (tmp / "empty").mkdir()
    return ["--project", str(tmp / "empty")], ["empty", "holds no bundle.toml"]


def _bundle_is_a_folder(tmp):
    (tmp / "p" / "bundle.toml").mkdir(parents=True)
    return ["--project", str(tmp / "p")], ["bundle.toml is not a readable file"]


def _bundle_dangles(tmp):
    (tmp / "p").mkdir()
    (tmp / "p" / "bundle.toml").symlink_to(tmp / "gone.toml")
    return ["--project", str(tmp / "p")], ["bundle.toml is not a readable file"]


def _unknown_backend(tmp):
    return ["--backend", "tpu"], ["--backend", "'tpu'"]


def _unknown_flag(tmp):
    return ["--frobnicate"], ["--frobnicate"]


def _json_is_a_folder(tmp):
    return ["--json", str(tmp)], [str(tmp), "is a folder"]


def _json_through_a_file(tmp):
    (tmp / "afile").write_text("x")
    return ["--json", str(tmp / "afile" / "r.json")], ["afile", "Not a directory"]


def _json_in_proc(tmp):
    return ["--json", "/proc/self/no/r.json"], ["/proc/self/no/r.json", "cannot be written"]


def _report_through_a_file(tmp):
    (tmp / "afile").write_text("x")
    return ["--report", str(tmp / "afile" / "r.html")], ["--report", "afile", "Not a directory"]


def _report_is_the_json(tmp):
    return ["--report", str(tmp / "r"), "--json", str(tmp / "r")], ["--report and --json name the same file"]


def _report_in_proc(tmp):
    return ["--report", "/proc/r.html"], ["/proc/r.html", "cannot be written"]


USAGE = [_missing, _a_file, _no_bundle, _bundle_is_a_folder, _bundle_dangles, _unknown_backend, _unknown_flag]
USAGE += [_json_is_a_folder, _json_through_a_file, _json_in_proc, _report_through_a_file, _report_is_the_json, _report_in_proc]


@pytest.mark.parametrize("case", USAGE, ids=lambda case: case.__name__.strip("_"))
def test_bad_usage_exits_2_naming_the_value(tmp_path, case):
    args, mentions = case(tmp_path)
    outcome = diagnostics(*args, cwd=tmp_path, watched=(tmp_path,))
    assert_refused(outcome, 2, *mentions)
    assert outcome.stdout == ""  # refused before the first stage


def test_an_unreadable_project_exits_2(tmp_path):
    folder = project(tmp_path / "locked")
    folder.chmod(0)
    try:
        outcome = diagnostics("--project", str(folder), cwd=tmp_path, watched=(tmp_path,), unprivileged=True)
    finally:
        folder.chmod(0o755)
    assert_refused(outcome, 2, str(folder), "cannot be read: Permission denied")


@pytest.mark.parametrize("flag", ["--json", "--report"])
def test_a_report_folder_without_write_permission_exits_2(tmp_path, flag):
    (tmp_path / "readonly").mkdir(mode=0o555)
    outcome = diagnostics(flag, str(tmp_path / "readonly" / "r.out"), cwd=tmp_path, watched=(tmp_path,), unprivileged=True)
    assert_refused(outcome, 2, f"{flag} {tmp_path / 'readonly' / 'r.out'}", "Permission denied")


@pytest.mark.parametrize("where", ["missing-folder/r.html", "afile/r.html", "."])
def test_bundler_diagnose_refuses_a_report_it_cannot_write_before_running(tmp_path, where):
    folder = project(tmp_path / "p")
    (tmp_path / "afile").write_text("x")
    outcome = run(["diagnose", "--project", str(folder), "--report", str(tmp_path / where), "--json"], cwd=tmp_path, watched=(tmp_path,))
    assert_refused(outcome, 2 if where == "." else 10, "--report", json_mode=True)
    assert "Running diagnostics" not in outcome.stderr


# --- a plan the diagnostics cannot use: stage 1 fails, exit 11 -------------------------------------------

PLANS = {
    "does-not-parse": (PLAN.format(card="H200", lots=1).replace("[package]", "[package"), "does not parse as TOML"),
    "not-utf8": (b"\xff\xfe[package]\n", "does not parse as TOML"),
    "unknown-card": (PLAN.format(card="H300", lots=1), "orders 'H300', which the catalog"),
    "no-package": ("days = 3\n", "has no [package] table"),
    "zero-lots": (PLAN.format(card="H200", lots=0), "lots must be a whole number"),
    "text-lots": (PLAN.format(card="H200", lots='"two"'), "lots must be a whole number"),
    "nan-lots": (PLAN.format(card="H200", lots="nan"), "lots must be a whole number"),
    "huge-lots": (PLAN.format(card="H200", lots="1e400"), "lots must be a whole number"),
    "missing-catalog": ('catalog = "prices.toml"\n' + PLAN.format(card="H200", lots=1), "prices.toml, which does not exist"),
    "bad-cards-per-lot": (PLAN.format(card="B200", lots=1), "cards_per_lot must be a whole number"),
}


@pytest.mark.parametrize("name", sorted(PLANS))
def test_a_plan_that_cannot_be_used_fails_stage_1(tmp_path, name):
    plan, mention = PLANS[name]
    folder = project(tmp_path / "p", plan="", catalog=CATALOG.replace("cards_per_lot = 2", "cards_per_lot = -2"))
    (folder / "plan.toml").write_bytes(plan if isinstance(plan, bytes) else plan.encode())
    out = tmp_path / "out" / "report.json"
    outcome = diagnostics("--project", str(folder), "--backend", "cpu", "--json", str(out), cwd=tmp_path, watched=(folder,))
    text = outcome.stdout + outcome.stderr
    assert outcome.code == 11, text
    assert "Traceback" not in text and outcome.changed == []
    row = next(line for line in outcome.stdout.splitlines() if "interpreter" in line)
    assert "FAIL" in row and mention in row and str(folder) in row, row
    assert "hint: " in outcome.stdout
    assert json.loads(out.read_text())["first_failure"] == "interpreter"


def test_a_plan_that_is_a_folder_fails_stage_1(tmp_path):
    folder = project(tmp_path / "p")
    (folder / "plan.toml").mkdir()
    outcome = diagnostics("--project", str(folder), "--backend", "cpu", cwd=tmp_path, watched=(folder,))
    assert outcome.code == 11 and "plan.toml is not a readable file" in outcome.stdout
    assert "Traceback" not in outcome.stdout + outcome.stderr and os.listdir(folder / "plan.toml") == []


def test_bundler_diagnose_relays_the_bad_usage_of_the_projects_own_copy(tmp_path):
    """A project's own diagnostics/ copy refuses what it is given: one paragraph, exit 2, not two."""
    folder = project(tmp_path / "p")
    (folder / "diagnostics").mkdir()
    (folder / "diagnostics" / "run.py").write_text(
        "import sys\nprint('Error: --report cannot be written: Read-only file system. Hint: Pick a writable folder.')\nsys.exit(2)\n"
    )
    outcome = run(["diagnose", "--local", "--project", str(folder), "--json"], cwd=tmp_path, watched=(folder,))
    assert_refused(outcome, 2, "--report cannot be written: Read-only file system", json_mode=True)
