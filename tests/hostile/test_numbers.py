"""Numbers that are not what they claim: NaN, infinities, 1e400, integers beyond TOML's range, a
fraction where a count belongs, text where a number belongs. plan.toml and catalog.toml
(exit 3), `new --set` (exit 2) and the pilot's config/pilot.json (exit 2, before any run
folder exists) refuse each one, naming the key and the file.
"""

from __future__ import annotations

import pytest

from tests.hostile.harness import assert_refused, run
from tests.hostile.prepared import pilot_argv, pilot_env, project_copy, replace_text

BIG = "99999999999999999999"  # beyond TOML's 64-bit integers


@pytest.fixture
def project(tmp_path_factory, tmp_path):
    return project_copy(tmp_path_factory, "fresh", tmp_path)


@pytest.mark.parametrize(
    "old, new, words",
    [
        ("hours = 12", "hours = nan", "hours must be a number of hours, got NaN"),
        ("hours = 12", "hours = inf", "hours must be a number of hours, got Infinity"),
        ("hours = 12", "hours = -inf", "hours must be a number of hours, got -Infinity"),
        ("hours = 12", "hours = 1e400", "hours = 1E+400 is outside 0 to 8760"),
        ("hours = 12", "hours = 8761", "hours = 8761 is outside 0 to 8760"),
        ("hours = 12", f"hours = {BIG}", f"hours = {BIG} is outside 0 to 8760"),
        ("days = 3", "days = nan", "package.days must be a whole number, got NaN"),
        ("days = 3", "days = inf", "package.days must be a whole number, got Infinity"),
        ("days = 3", "days = 1e400", "package.days = 1E+400 is outside 1 to 30"),
        ("days = 3", "days = 3.5", "package.days must be a whole number, got 3.5"),
        ("lots = 1", f"lots = {BIG}", f"package.lots = {BIG} is outside 1 to 10"),
        ("lots = 1", "lots = -1", "package.lots = -1 is outside 1 to 10"),
        ("hours = 2", "hours = 2\nlot = nan", "lot must be a whole number, got NaN"),
    ],
)
def test_plan_numbers(project, old, new, words):
    replace_text(project / "plan.toml", old, new)
    assert_refused(run(["plan", str(project)], cwd=project, watched=(project,)), 3, "plan.toml", words)


@pytest.mark.parametrize(
    "old, new, words",
    [
        ('7 = "110"', "7 = nan", "price.7 must be an amount of USD, got NaN"),
        ('7 = "110"', "7 = inf", "price.7 must be an amount of USD, got Infinity"),
        ('7 = "110"', "7 = 1e400", "price.7 = 1E+400 is outside 0 to 10000000"),
        ('7 = "110"', '7 = "1e400"', "price.7 = '1e400' is outside 0 to 10000000"),
        ('7 = "110"', '7 = "NaN"', "price.7 must be an amount of USD, got the text 'NaN'"),
        ('7 = "110"', '7 = "-5"', "price.7 = '-5' is outside 0 to 10000000"),
        ("cards_per_lot = 1\nmemory_gb = 24", "cards_per_lot = nan\nmemory_gb = 24", "cards_per_lot must be a whole number, got NaN"),
        ("cards_per_lot = 1\nmemory_gb = 24", "cards_per_lot = 1e400\nmemory_gb = 24", "cards_per_lot = 1E+400 is outside 1 to 16"),
        ("memory_gb = 24", "memory_gb = inf", "memory_gb must be a whole number, got Infinity"),
        ("memory_gb = 24", f"memory_gb = {BIG}", f"memory_gb = {BIG} is outside 1 to 100000"),
    ],
)
def test_catalog_numbers(project, old, new, words):
    replace_text(project / "catalog.toml", old, new)
    assert_refused(run(["plan", str(project)], cwd=project, watched=(project,)), 3, "catalog.toml", words)


def test_expense_of_infinite_usd(project):
    (project / "plan.toml").write_text((project / "plan.toml").read_text() + '\n[[expenses]]\nname = "storage"\nusd = "inf"\n')
    assert_refused(run(["plan", str(project)], cwd=project, watched=(project,)), 3, "expense 'storage'", "got the text 'inf'")


@pytest.mark.parametrize("budget", [BIG, "0", "-5", "1e3", "3000.5", "\u0663\u0660\u0660\u0660", "1000001"])
def test_new_size_budget(tmp_path, budget):
    outcome = run(["new", "p", "--no-input", "--set", f"size_budget_mb={budget}", "--json"], cwd=tmp_path, watched=(tmp_path,))
    assert_refused(outcome, 2, "size_budget_mb", json_mode=True)


# config/pilot.json: (raw text replaced, so that JSON's own NaN/Infinity spellings reach the pilot)
@pytest.mark.parametrize(
    "old, new, words",
    [
        (
            '"learning_rate": 8.0',
            '"learning_rate": "fast"',
            "training.learning_rate must be a number from 0.0 to 1000.0, got the text 'fast'",
        ),
        ('"learning_rate": 8.0', '"learning_rate": 1e308', "training.learning_rate = 1e+308 is out of range"),
        ('"learning_rate": 8.0', '"learning_rate": 1e400', "training.learning_rate = inf is out of range"),
        ('"learning_rate": 8.0', '"learning_rate": NaN', "NaN is not a number JSON allows"),
        ('"learning_rate": 8.0', '"learning_rate": -Infinity', "-Infinity is not a number JSON allows"),
        ('"learning_rate": 8.0', '"learning_rate": null', "training.learning_rate must be a number"),
        ('"features": 4096', '"features": -1', "model.features = -1 is out of range: 1 to 1048576"),
        ('"features": 4096', '"features": 4096.5', "model.features must be a whole number"),
        ('"features": 4096', '"features": true', "model.features must be a whole number from 1 to 1048576, got true"),
        ('"features": 4096', f'"features": {BIG}', "model.features = 99999999999999999999 is out of range"),
        ('"seed": 20261130', '"seed": -1', "model.seed = -1 is out of range"),
        ('"steps": 1', '"steps": 0', "training.steps = 0 is out of range: 1 to 1000"),
        ('"scheduler_gamma": 0.5', '"scheduler_gamma": 2', "training.scheduler_gamma = 2 is out of range: 0.0 to 1.0"),
        ('"expected_documents": 12', '"expected_documents": 0', "expected_documents = 0 is out of range"),
        ('"expected_documents": 12', '"expected_documents": 1e400', "expected_documents must be a whole number"),
        ('"expected_rejections": 1', '"expected_rejections": -1', "expected_rejections = -1 is out of range"),
        ('"expected_rejections": 1', '"expected_rejections": 13', "expected_rejections = 13 is above expected_documents = 12"),
        ('"min_chars": 40', '"min_chars": 70000', "limits.min_chars = 70000 is above limits.max_chars = 60000"),
        ('"min_accuracy": 0.8', '"min_accuracy": 1.5', "stop_rules.quality_below_threshold.min_accuracy = 1.5 is out of range: 0 to 1"),
        ('"min_accuracy": 0.8', '"min_accuracy": NaN', "NaN is not a number JSON allows"),
    ],
)
def test_pilot_config_numbers(project, old, new, words):
    replace_text(project / "config/pilot.json", old, new)
    outcome = run(pilot_argv("--run-id", "never"), cwd=project, env=pilot_env(project), watched=(project,))
    assert_refused(outcome, 2, "pilot.json", words)
