"""Strict schemas: a typo in a key, an unknown key, a value of the wrong type. plan.toml and
catalog.toml (exit 3), the pilot's config/pilot.json and input manifest (exit 2 and 3):
each names the key and says what it should be; a wrong type is reported as a wrong type,
never as "missing"; a [[step]] meant as [[steps]] never silently drops a step.
"""

from __future__ import annotations

import json

import pytest

from tests.hostile.harness import assert_refused, run
from tests.hostile.prepared import edit_json, pilot_argv, pilot_env, project_copy, replace_text


@pytest.fixture
def project(tmp_path_factory, tmp_path):
    return project_copy(tmp_path_factory, "fresh", tmp_path)


@pytest.mark.parametrize(
    "old, new, words",
    [
        ('[[steps]]\nname = "variant A"', '[[step]]\nname = "variant A"', "unknown key 'step' in the top level"),
        ("hours = 12\n", "hourz = 12\n", "unknown key 'hourz' in [[steps]] #4"),
        ("lots = 1", "lots = 1\ngpu = 2", "unknown key 'gpu' in [package]"),
        ('catalog = "catalog.toml"', 'catalog = "catalog.toml"\nbudget = 100', "unknown key 'budget' in the top level"),
        ("[package]", "[pakage]", "unknown key 'pakage' in the top level"),
        ('card = "RTX 4090"   # a card listed in the catalog\n', "", "[package] lacks card"),
        ('card = "RTX 4090"', "card = 4090", "card 4090 is not in the catalog"),
        ("days = 3", 'days = "3"', "package.days must be a whole number, got the text '3'"),
        ("lots = 1", "lots = true", "package.lots must be a whole number, got the boolean true"),
        ("hours = 2", "hours = 2\nmachine = 'no'", "machine must be true or false, got the text 'no'"),
        ("hours = 2", "hours = 2\npriority = 5", "has priority 5"),
        ("hours = 2", "hours = 2\nruns = 5", "runs must be a pattern or a list of them"),
        ('name = "variant A"', "name = 5", "[[steps]] #5 name must be text, got the number 5"),
        ('catalog = "catalog.toml"', "catalog = 5", "catalog must be a file name, got the number 5"),
        ("[package]", "expenses = 3\n[package]", "expenses must be an array of tables"),
    ],
)
def test_plan_schema(project, old, new, words):
    replace_text(project / "plan.toml", old, new)
    assert_refused(run(["plan", str(project), "--json"], cwd=project, watched=(project,)), 3, "plan.toml", words, json_mode=True)


def test_an_expense_without_its_amount(project):
    (project / "plan.toml").write_text((project / "plan.toml").read_text() + '\n[[expenses]]\nname = "storage"\n')
    assert_refused(run(["plan", str(project)], cwd=project, watched=(project,)), 3, "[[expenses]] #1 lacks usd")


@pytest.mark.parametrize(
    "old, new, words",
    [
        ('[cards."RTX 4090"]', 'currency = "EUR"\n[cards."RTX 4090"]', "unknown key 'currency' in the top level"),
        ('[cards."L40S"]', 'currency = "EUR"\n[cards."L40S"]', "unknown key 'currency' in [cards.\"RTX 4090\"]"),
        ("memory_gb = 48", "memory_gb = 48\nprice_usd = 3", "unknown key 'price_usd' in [cards.\"L40S\"]"),
        ('7 = "110"', '5 = "110"', "unknown key '5' in [cards.\"RTX 4090\"] price"),
        ('7 = "110"', '7 = "cheap"', "must be an amount of USD, got the text 'cheap'"),
        (
            "cards_per_lot = 1\nmemory_gb = 24",
            'cards_per_lot = "2"\nmemory_gb = 24',
            "cards_per_lot must be a whole number, got the text '2'",
        ),
        ('[cards."RTX 4090"]', '[cards."RTX 4090".extra]\n[cards."X"]', "unknown key 'extra'"),
    ],
)
def test_catalog_schema(project, old, new, words):
    replace_text(project / "catalog.toml", old, new)
    assert_refused(run(["plan", str(project)], cwd=project, watched=(project,)), 3, "catalog.toml", words)


def _set(*keys, value):
    def change(document):
        for key in keys[:-1]:
            document = document[key]
        document[keys[-1]] = value

    return change


def _drop(key):
    return lambda document: document.pop(key)


@pytest.mark.parametrize(
    "change, words",
    [
        (_set("dataset", value="x"), "dataset is not a known key"),
        (_set("traning", value={"steps": 1}), "traning is not a known key"),
        (_set("training", "learning_rat", value=0.5), "training.learning_rat is not a known key"),
        (_set("stop_rules", "nan_loss", value=True), "stop_rules.nan_loss is not a known key"),
        (_set("limits", "max_words", value=10), "limits.max_words is not a known key"),
        (_drop("model"), "model is missing"),
        (_drop("expected_rejections"), "expected_rejections is missing"),
        (_set("categories", value="invoice"), "categories must be a non-empty list of names, got the text 'invoice'"),
        (_set("categories", value=[]), "categories must be a non-empty list of names, got a list"),
        (_set("categories", value=["invoice", "invoice"]), "categories lists a name twice"),
        (_set("data_dir", value=5), "data_dir must be a path relative to the project folder, got 5"),
        (_set("limits", value=[40, 60000]), "limits must be an object, got a list"),
        (_set("stop_rules", value=[]), "stop_rules must be an object, got a list"),
        (_set("stop_rules", "quality_below_threshold", value="yes"), "quality_below_threshold must be false or an object"),
        (_set("stop_rules", "quality_below_threshold", "check_set", value=5), 'check_set must be "labelled" or a list'),
        (_set("stop_rules", "non_finite_loss", value=1), "stop_rules.non_finite_loss must be true or false, got 1"),
    ],
)
def test_pilot_config_schema(project, change, words):
    edit_json(project / "config/pilot.json", change)
    outcome = run(pilot_argv("--run-id", "never"), cwd=project, env=pilot_env(project), watched=(project,))
    assert_refused(outcome, 2, "pilot.json", words)


@pytest.mark.parametrize(
    "text, words",
    [
        ('{"categories": ["a"], "categories": ["b"]}', "key 'categories' appears twice"),
        ("[1, 2]", "the top level must be an object, got a list"),
        ("", "is not valid JSON"),
        ('{"categories": [', "is not valid JSON"),
    ],
)
def test_pilot_config_that_is_not_an_object(project, text, words):
    (project / "config/pilot.json").write_text(text)
    outcome = run(pilot_argv("--run-id", "never"), cwd=project, env=pilot_env(project), watched=(project,))
    assert_refused(outcome, 2, "pilot.json", words)


@pytest.mark.parametrize(
    "change, words",
    [
        (lambda m: m["documents"][0].update(source="scanner"), "document doc-01 must hold id, file and sha256"),
        (lambda m: m["documents"][0].pop("sha256"), "document doc-01 must hold id, file and sha256"),
        (lambda m: m["documents"][0].update(sha256="abc"), "sha256 64 hex digits"),
        (lambda m: m["documents"][0].update(expect="maybe"), "expect = 'maybe' is neither accept nor reject"),
        (lambda m: m["documents"][0].update(label=5), "id and label must be text"),
        (lambda m: m.update(author="me"), "is not an input manifest"),
        (lambda m: m.update(documents={}), "is not an input manifest"),
    ],
)
def test_input_manifest_schema(project, change, words):
    edit_json(project / "data/pilot/MANIFEST.json", change)
    outcome = run(pilot_argv("--run-id", "never"), cwd=project, env=pilot_env(project), watched=(project,))
    assert_refused(outcome, 3, "MANIFEST.json", words)


def test_a_refused_config_leaves_no_run_folder(project):
    edit_json(project / "config/pilot.json", _set("training", "learning_rate", value="fast"))
    outcome = run(pilot_argv(), cwd=project, env=pilot_env(project), watched=(project,))
    assert_refused(outcome, 2, "learning_rate")
    assert sorted(p.name for p in (project / "runs").iterdir()) == [".gitkeep"]
    assert json.loads((project / "config/pilot.json").read_text())["training"]["learning_rate"] == "fast"
