"""`bundler plan`: order summary, schedule against the window, cost per accepted delivery."""

import json
import re
from decimal import Decimal

import pytest

from bundler.evidence.campaign import load_campaign, schedule
from tests.conftest import run_cli
from tests.runs_support import change_corpus, new_project, pilot, set_config


@pytest.fixture
def project(tmp_path):
    return new_project(tmp_path)


def _edit(path, old, new, count=1):
    text = path.read_text()
    assert text.count(old) >= 1, old
    path.write_text(text.replace(old, new, count))


def _plan_json(project):
    result = run_cli("plan", str(project), "--json")
    return result, json.loads(result.stdout) if result.stdout.strip() else None


def test_the_shipped_plan_fits_48_hours_in_a_72_hour_window(project):
    result, payload = _plan_json(project)
    assert result.returncode == 0, result.stderr
    assert payload["order"] == {
        "card": "RTX 4090",
        "days": 3,
        "lots": 1,
        "cards_per_lot": 1,
        "total_cards": 1,
        "lot_price_usd": "47.14",
        "total_usd": "47.14",
        "catalog": str((project / "catalog.toml").resolve()),
    }
    assert payload["schedule"]["longest_hours"] == "48" and payload["schedule"]["uncommitted_hours"] == "24"
    assert "48 h busy in the 72 h window leaves 24 h uncommitted" in result.stderr
    assert payload["cost"] is None and "No runs yet" in result.stderr


def test_30_more_hours_exceed_three_days_by_6_and_suggest_7_days(project):
    plan = project / "plan.toml"
    plan.write_text(plan.read_text() + '\n[[steps]]\nname = "long inputs"\nhours = 30\n')
    result, payload = _plan_json(project)
    assert result.returncode == 1
    assert payload["schedule"]["longest_hours"] == "78" and payload["schedule"]["exceeds_by_hours"] == "6"
    assert "exceeds the 3-day window by 6 h" in result.stderr
    assert "7-day package (110.00 USD per lot) or a smaller protocol" in result.stderr


def test_two_lots_total_is_lot_price_times_lots(project):
    _edit(project / "plan.toml", "lots = 1", "lots = 2")
    _, payload = _plan_json(project)
    assert payload["order"]["total_usd"] == "94.28" and payload["order"]["total_cards"] == 2


def test_a_b200_lot_holds_two_cards_and_is_not_multiplied_again(project):
    _edit(project / "catalog.toml", "cards_per_lot = 2\nmemory_gb = 180", 'cards_per_lot = 2\nmemory_gb = 180\nprice = { 7 = "1000.50" }')
    _edit(project / "plan.toml", 'card = "RTX 4090"', 'card = "B200"')
    _edit(project / "plan.toml", "days = 3", "days = 7")
    _edit(project / "plan.toml", "lots = 1", "lots = 3")
    result, payload = _plan_json(project)
    assert result.returncode == 0, result.stderr
    assert payload["order"]["total_cards"] == 6
    assert payload["order"]["total_usd"] == "3001.50"  # 1000.50 x 3 lots, not x 6 cards


def test_a_card_without_a_price_names_the_catalog(project):
    _edit(project / "plan.toml", 'card = "RTX 4090"', 'card = "H100 SXM"')
    result = run_cli("plan", str(project))
    assert result.returncode == 3
    assert "has no 3-day price for H100 SXM" in result.stderr and "catalog.toml" in result.stderr


@pytest.mark.parametrize(
    "old, new, words",
    [
        ("lots = 1", "lots = 0", "package.lots = 0 is outside 1 to 10"),
        ("lots = 1", "lots = 11", "package.lots = 11 is outside 1 to 10"),
        ("days = 3", "days = 5", "package.days = 5 is not a package length"),
        ('card = "RTX 4090"', 'card = "GTX 9090"', "card 'GTX 9090' is not in the catalog"),
        ("hours = 12", "hours = -4", "hours = -4 is outside 0 to 8760"),
        ("hours = 2", 'hours = "two"', "hours must be a number of hours, got the text 'two'"),
    ],
)
def test_nonsense_input_is_refused(project, old, new, words):
    _edit(project / "plan.toml", old, new)
    result = run_cli("plan", str(project))
    assert result.returncode == 3, result.stderr
    assert words in result.stderr


def test_missing_plan(project):
    (project / "plan.toml").unlink()
    result = run_cli("plan", str(project))
    assert result.returncode == 3 and "plan.toml not found" in result.stderr


def test_steps_on_the_same_lot_add_up_and_other_lots_run_beside(project):
    _edit(project / "plan.toml", "lots = 1", "lots = 2")
    _edit(project / "plan.toml", 'name = "variant B"\nhours = 12', 'name = "variant B"\nhours = 12\nlot = 2')
    sched = schedule(load_campaign(project))
    assert sched.busy_by_lot == {1: Decimal(36), 2: Decimal(12)}
    assert sched.slack == Decimal(36)


def test_money_is_exact():
    from bundler.evidence.campaign import money

    assert Decimal("47.14") / 2 == Decimal("23.57")
    assert money(Decimal("110") / 3) == "36.67"


def test_cost_per_delivery_counts_corpora_not_replays(project):
    assert pilot(project, "--run-id", "corpus-1").returncode == 0
    assert pilot(project, "--run-id", "corpus-1-again").returncode == 0
    _, payload = _plan_json(project)
    assert payload["cost"]["accepted_runs"] == 2 and payload["cost"]["deliveries"] == 1
    assert payload["cost"]["cost_per_delivery_usd"] == "47.14"

    change_corpus(project)
    assert pilot(project, "--run-id", "corpus-2").returncode == 0
    result, payload = _plan_json(project)
    assert payload["cost"]["deliveries"] == 2 and payload["cost"]["cost_per_delivery_usd"] == "23.57"
    assert "Cost per accepted delivery: 23.57 USD" in result.stderr
    pilot_step = next(line for line in payload["planned_vs_actual"] if line["step"].startswith("pilot"))
    assert pilot_step["planned_hours"] == "1" and set(pilot_step["runs"]) == {"corpus-1", "corpus-1-again", "corpus-2"}
    assert Decimal(pilot_step["actual_hours"]) > 0


def test_zero_accepted_deliveries_leave_the_ratio_undefined(project):
    set_config(project, training={"steps": 1, "learning_rate": 0.0, "scheduler_gamma": 0.5})
    assert pilot(project, "--run-id", "stopped").returncode == 6
    plan = project / "plan.toml"
    plan.write_text(plan.read_text() + '\n[[expenses]]\nname = "storage"\nusd = "4.00"\n')
    result, payload = _plan_json(project)
    assert payload["cost"]["cost_per_delivery_usd"] is None
    assert payload["cost"]["spent_usd"] == "51.14"
    assert "undefined, 0 accepted deliveries; spent 51.14 USD" in result.stderr
    assert "stopped: stopped (stop rule quality_below_threshold" in result.stderr
    assert not re.search(r"per accepted delivery: 0(\.00)? USD", result.stderr)
