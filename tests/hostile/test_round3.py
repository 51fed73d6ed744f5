"""Round three of hostile input: user text that looks like markup, numbers at the edges of
their type, nesting deep enough to exhaust the parser, a full disk and link loops, names
at the filesystem's length limit, cache and option values that are not what they claim,
line endings kept, and what a new project inherits from the installed template.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.hostile.harness import assert_refused, run
from tests.hostile.prepared import edit_json, project_copy


@pytest.fixture
def finished(tmp_path_factory, tmp_path):
    return project_copy(tmp_path_factory, "finished", tmp_path)


@pytest.fixture
def fresh(tmp_path_factory, tmp_path):
    return project_copy(tmp_path_factory, "fresh", tmp_path)


def ok(outcome, code: int = 0) -> str:
    text = outcome.stdout + outcome.stderr
    assert outcome.code == code, f"exit {outcome.code}:\n{text[-3000:]}"
    assert "Traceback" not in text, text[-3000:]
    return text


# --- user text shown as it was written (never read as Rich markup) ---

MARKUP = "moved to [/mnt/data] [bold]x[/bold [optional]"


def test_a_decision_in_brackets_is_shown_as_written_by_summary_and_plan(finished):
    ok(run(["runs", "decide", "good", "--decision", "launch", "--why", MARKUP], cwd=finished))
    summary = ok(run(["runs", "summary", "--no-reload"], cwd=finished))
    assert "[optional]" in summary and "[/mnt/data]" in summary
    ok(run(["plan"], cwd=finished))
    document = json.loads(run(["runs", "summary", "--no-reload", "--json"], cwd=finished).stdout)
    assert any(MARKUP in json.dumps(row) for row in document["runs"]), document


def test_a_step_name_in_brackets_is_shown_as_written(fresh):
    plan = fresh / "plan.toml"
    plan.write_text(plan.read_text().replace('name = "variant B"', 'name = "[optional] variant B [/x]"'))
    text = ok(run(["plan"], cwd=fresh))
    assert "[optional] variant B [/x]" in text


def test_verify_of_a_run_whose_decision_has_brackets(finished):
    ok(run(["runs", "decide", "good", "--decision", "fix-env", "--why", "[red]boom[/blue]"], cwd=finished))
    outcome = run(["runs", "verify", "runs/good", "--no-reload", "--json"], cwd=finished)
    assert "Traceback" not in outcome.stderr, outcome.stderr[-3000:]
    assert json.loads(outcome.stdout)["checks"], outcome.stdout


# --- numbers at the edges ---


def test_an_enormous_duration_in_a_summary_does_not_crash_plan(finished):
    edit_json(finished / "runs/good/summary.json", lambda summary: summary.update(seconds=1e30))
    outcome = run(["plan"], cwd=finished, watched=(finished,))
    text = outcome.stdout + outcome.stderr
    assert "Traceback" not in text and "InvalidOperation" not in text, text[-3000:]
    assert outcome.code in (0, 3), text[-2000:]
    assert outcome.changed == []


@pytest.mark.parametrize("seconds", [float("nan"), -5, True, "12"])
def test_a_duration_that_is_no_duration_is_not_added(finished, seconds):
    edit_json(finished / "runs/good/summary.json", lambda summary: summary.update(seconds=seconds))
    outcome = run(["plan", "--json"], cwd=finished)
    assert "Traceback" not in outcome.stderr, outcome.stderr[-3000:]
    assert outcome.code == 0, outcome.stderr[-2000:]
    assert "nan" not in outcome.stdout.lower().replace('"nan"', "")


def test_a_price_with_fractional_cents_multiplies_as_shown(fresh):
    catalog = fresh / "catalog.toml"
    catalog.write_text(catalog.read_text().replace('3 = "47.14"', '3 = "47.145"'))
    plan = fresh / "plan.toml"
    plan.write_text(plan.read_text().replace("lots = 1 ", "lots = 3 "))
    outcome = run(["plan", "--json"], cwd=fresh)
    ok(outcome)
    order = json.loads(outcome.stdout)["order"]
    from decimal import Decimal

    assert Decimal(order["lot_price_usd"]) == Decimal("47.145")
    assert Decimal(order["lot_price_usd"]) * 3 == Decimal(order["total_usd"]), order


# --- nesting that exhausts a recursive parser ---

DEEP = 100_000


@pytest.mark.parametrize(
    "where, argv",
    [
        ("config/pilot.json", ["check"]),
        ("runs/good/summary.json", ["runs", "verify", "runs/good", "--no-reload"]),
        ("runs/good/manifest.json", ["runs", "verify", "runs/good", "--no-reload"]),
        ("runs/good/inputs.json", ["runs", "verify", "runs/good", "--no-reload"]),
    ],
)
def test_deeply_nested_json_is_refused_naming_the_file(finished, where, argv):
    (finished / where).write_text("[" * DEEP + "]" * DEEP)
    outcome = run(argv, cwd=finished)
    text = outcome.stdout + outcome.stderr
    assert "Traceback" not in text and "RecursionError" not in text, text[-3000:]
    assert outcome.code in (1, 3), text[-2000:]
    assert Path(where).name in text


@pytest.mark.parametrize("name", ["plan.toml", "bundle.toml"])
def test_deeply_nested_toml_is_refused_naming_the_file(fresh, name):
    with (fresh / name).open("a") as handle:
        handle.write("\ndeep = " + "[" * DEEP + "]" * DEEP + "\n")
    outcome = run(["plan"] if name == "plan.toml" else ["check"], cwd=fresh)
    text = outcome.stdout + outcome.stderr
    assert "Traceback" not in text and "RecursionError" not in text, text[-3000:]
    assert outcome.code in (1, 3), text[-2000:]
    assert name in text


# --- a full disk, link loops, long names ---


def _small_files(limit: int):
    def apply() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG instead of killing
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


def _limited(argv: list[str], cwd: Path, limit: int) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "bundler", *argv], cwd=cwd, capture_output=True, text=True, timeout=300, preexec_fn=_small_files(limit)
    )


def test_new_on_a_full_disk_says_so_in_one_paragraph(tmp_path):
    completed = _limited(["new", "example", "--no-input"], tmp_path, 4096)
    assert completed.returncode == 10, completed.stderr[-2000:]
    errors = [line for line in completed.stderr.splitlines() if line.startswith("Error: ")]
    assert len(errors) == 1 and len(errors[0]) < 1200, completed.stderr[-3000:]
    assert "Traceback" not in completed.stderr and "[(" not in completed.stderr
    assert not (tmp_path / "example").exists() and list(tmp_path.iterdir()) == []


def test_export_on_a_full_disk_says_so_and_leaves_nothing(finished, tmp_path):
    dest = tmp_path / "copy"
    completed = _limited(["runs", "export", "runs/good", str(dest), "--no-reload"], finished, 4096)
    assert completed.returncode == 10, completed.stderr[-2000:]
    errors = [line for line in completed.stderr.splitlines() if line.startswith("Error: ")]
    assert len(errors) == 1 and len(errors[0]) < 1200, completed.stderr[-3000:]
    assert "[(" not in completed.stderr
    assert not dest.exists() and not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_a_link_loop_in_a_run_is_named_by_export(finished, tmp_path):
    (finished / "runs/good/loop").symlink_to("loop")
    outcome = run(["runs", "export", "runs/good", str(tmp_path / "copy"), "--no-reload"], cwd=finished, watched=(tmp_path,))
    text = outcome.stdout + outcome.stderr
    assert "Traceback" not in text and "[(" not in text, text[-3000:]
    assert outcome.code != 0 and "loop" in text


def test_a_destination_at_the_name_limit_is_not_refused_for_bundlers_staging_name(tmp_path):
    name = "p" * 250
    outcome = run(["new", name, "--no-input", "--name", "Long", "--set", "project_slug=longname"], cwd=tmp_path)
    ok(outcome)
    assert (tmp_path / name / "bundle.toml").is_file()
    assert [p.name for p in tmp_path.iterdir()] == [name]


def test_a_name_over_the_limit_is_refused_naming_it(tmp_path):
    name = "p" * 256
    outcome = run(["new", name, "--no-input", "--name", "Long", "--set", "project_slug=longname"], cwd=tmp_path, watched=(tmp_path,))
    assert_refused(outcome, 10, "too long")


# --- values that are not what they claim ---


def test_a_cache_dir_that_is_a_file_is_named(fresh, tmp_path):
    cache = tmp_path / "cache-file"
    cache.write_text("not a folder\n")
    outcome = run(["cache", "prune", "--wheels", "--dry-run"], cwd=fresh, env={"BUNDLER_CACHE_DIR": str(cache)}, watched=(tmp_path,))
    assert_refused(outcome, 10, str(cache), "BUNDLER_CACHE_DIR")


@pytest.mark.parametrize("days", ["nan", "inf", "-1"])
def test_prune_older_than_must_be_a_finite_number_of_days(fresh, tmp_path, days):
    cache = tmp_path / "cache"
    wheel = cache / "wheels/sha256/ab/abcd/x-1-py3-none-any.whl"
    wheel.parent.mkdir(parents=True)
    wheel.write_bytes(b"wheel")
    outcome = run(["cache", "prune", "--wheels", "--older-than", days], cwd=fresh, env={"BUNDLER_CACHE_DIR": str(cache)}, watched=(cache,))
    assert_refused(outcome, 2, "--older-than")
    assert wheel.is_file()


# --- what a file was is what it stays ---


def test_lock_keeps_a_crlf_bundle_toml_crlf(fresh, indexed):
    bundle = fresh / "bundle.toml"
    bundle.write_bytes(bundle.read_bytes().replace(b"\r\n", b"\n").replace(b"\n", b"\r\n"))
    outcome = run(["lock", "--cpu", "--torch", "2.9.1"], cwd=fresh)
    ok(outcome)
    data = bundle.read_bytes()
    assert b'"2.9.1"' in data
    assert data.count(b"\n") == data.count(b"\r\n"), "a line ending was changed"


def test_a_new_project_carries_no_bytecode_from_the_installed_template(tmp_path, monkeypatch):
    from bundler.resources import resource_path

    template = resource_path("template")
    stray = template / "{{cookiecutter.project_slug}}" / "src" / "{{cookiecutter.package_name}}" / "__pycache__"
    made = not stray.exists()
    stray.mkdir(exist_ok=True)
    planted = stray / "pilot.cpython-311.pyc"
    planted_made = not planted.exists()
    if planted_made:
        planted.write_bytes(b"\x00compiled from /usr/lib/python3/site-packages/bundler/_data/template\x00")
    try:
        ok(run(["new", "example", "--no-input"], cwd=tmp_path))
    finally:
        if planted_made:
            planted.unlink()
        if made:
            os.rmdir(stray)
    found = [str(p) for p in (tmp_path / "example").rglob("*") if p.suffix == ".pyc" or p.name == "__pycache__"]
    assert found == []


def test_the_pilot_without_torch_says_so_in_one_paragraph(fresh, tmp_path):
    venv = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    completed = subprocess.run(
        [str(venv / "bin/python"), "-m", "example.pilot", "--config", "config/pilot.json", "--run-id", "x"],
        cwd=fresh,
        env={**os.environ, "PYTHONPATH": str(fresh / "src")},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "Traceback" not in completed.stderr, completed.stderr[-3000:]
    assert completed.returncode != 0
    assert "torch" in completed.stderr and "Hint" in completed.stderr, completed.stderr
    assert not (fresh / "runs/x").exists()
