"""The campaign of a project (plan.toml) checked against a price catalog, for `bundler plan`.

plan.toml names the package (card, days 3/7/30, lots 1-10), the catalog file (prices in
USD per lot for each duration; user-editable, catalog.toml beside plan.toml by default)
and the machine-busy steps. The check gives the order summary (total = lot price x lots;
a lot price already includes all its cards), the schedule against the rental window,
and, once runs exist, planned versus actual and the cost per accepted delivery. Money is
Decimal throughout: 47.14 / 2 is exactly 23.57. Neither file is ever rewritten.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

from bundler.contracts.planschema import DEFAULT_CARDS_PER_LOT, DEFAULT_CATALOG, MAX_CARDS_PER_LOT, MAX_LOTS, PLAN_FILE
from bundler.errors import ProjectFileError
from bundler.fsutil import MAX_INT, check_table, read_toml, type_name

DURATIONS = (3, 7, 30)
PRIORITIES = ("essential", "useful", "exploratory")
CENT = Decimal("0.01")
EXACT_USD = Decimal("0.000001")  # a price list's precision: more digits than this is a quotient


@dataclass(frozen=True)
class Card:
    name: str
    cards_per_lot: int
    prices: dict[int, Decimal]


@dataclass(frozen=True)
class Step:
    name: str
    hours: Decimal
    lot: int = 1
    machine: bool = True
    priority: str = "essential"
    runs: tuple[str, ...] = ()


@dataclass
class Campaign:
    path: Path
    catalog_path: Path
    card: Card
    days: int
    lots: int
    steps: list[Step]
    expenses: list[tuple[str, Decimal]] = field(default_factory=list)
    catalog: dict[str, Card] = field(default_factory=dict)

    @property
    def lot_price(self) -> Decimal:
        return self.card.prices[self.days]

    @property
    def total(self) -> Decimal:
        return self.lot_price * self.lots  # a lot price already covers its cards

    @property
    def total_cards(self) -> int:
        return self.card.cards_per_lot * self.lots

    @property
    def window_hours(self) -> int:
        return self.days * 24


# -- loading and validation -----------------------------------------------------------
# Every key is checked (an unknown one, such as a [[step]] meant as [[steps]], is refused),
# and every number has a type and a range: NaN, infinity and 1e400 are not hours or USD.
PLAN_KEYS, PACKAGE_KEYS = ("catalog", "package", "steps", "expenses"), ("card", "days", "lots")
STEP_KEYS, EXPENSE_KEYS = ("name", "hours", "lot", "machine", "priority", "runs"), ("name", "usd")
CATALOG_KEYS, CARD_KEYS = ("cards",), ("cards_per_lot", "memory_gb", "price")
MAX_HOURS, MAX_USD, MAX_MEMORY_GB = 8760, Decimal(10_000_000), 100_000


def load_campaign(project: Path, *, priced: bool = True) -> Campaign:
    """plan.toml and its catalog, checked; ``priced=False`` for readers of the order alone
    (card, lots), such as `bundler job`, which need no price for the chosen duration."""
    path = Path(project) / PLAN_FILE
    raw = _read_toml(path, "`bundler new` writes one; copy it from a new project or write [package] card/days/lots and [[steps]].")
    check_table(path, "the top level", raw, PLAN_KEYS, required=("package",))
    catalog_path = _catalog_path(path, raw.get("catalog", DEFAULT_CATALOG))
    catalog = load_catalog(catalog_path)
    package = check_table(path, "[package]", raw["package"], PACKAGE_KEYS, required=PACKAGE_KEYS)
    card_name = package["card"]
    if card_name not in catalog:
        raise ProjectFileError(
            f"{path}: card {card_name!r} is not in the catalog {catalog_path}.",
            hint=f"Known cards: {', '.join(catalog)}. Add it to the catalog with its price if you have an offer for it.",
            path=path,
            value=str(card_name),
        )
    card = catalog[card_name]
    days = _whole(package["days"], path, "package.days", 1, max(DURATIONS))
    if days not in DURATIONS:
        raise ProjectFileError(
            f"{path}: package.days = {days} is not a package length.", hint="Packages last 3, 7 or 30 days.", path=path, value=days
        )
    lots = _whole(package["lots"], path, "package.lots", 1, MAX_LOTS)
    if priced and days not in card.prices:
        raise ProjectFileError(
            f"the catalog {catalog_path} has no {days}-day price for {card.name}.",
            hint=f'Add it under [cards."{card.name}".price] as {days} = "<USD per lot>" from the offer you see; priced durations: '
            f"{', '.join(map(str, sorted(card.prices))) or 'none'}.",
            path=catalog_path,
        )
    steps = [_step(entry, index, path, lots) for index, entry in enumerate(_array(raw, "steps", path), 1)]
    expenses = [_expense(entry, index, path) for index, entry in enumerate(_array(raw, "expenses", path), 1)]
    return Campaign(path, catalog_path, card, days, lots, steps, expenses, catalog)


def load_catalog(path: Path) -> dict[str, Card]:
    raw = _read_toml(
        path,
        'The catalog lists prices in USD per lot: [cards."RTX 4090"] cards_per_lot = 1, price = { 3 = "47.14", 7 = "110", 30 = "390" }.',
    )
    cards = check_table(path, "the top level", raw, CATALOG_KEYS, required=CATALOG_KEYS)["cards"]
    if not isinstance(cards, dict) or not cards:
        raise ProjectFileError(f'{path} lists no [cards."NAME"] table.', hint="Add at least the card you plan to rent.", path=path)
    catalog = {}
    for name, entry in cards.items():
        where = f'[cards."{name}"]'
        check_table(path, where, entry, CARD_KEYS)
        per_lot = _whole(entry.get("cards_per_lot", DEFAULT_CARDS_PER_LOT), path, f"{where} cards_per_lot", 1, MAX_CARDS_PER_LOT)
        if entry.get("memory_gb") is not None:  # for the reader of the catalog: checked, not used in the sums
            _whole(entry["memory_gb"], path, f"{where} memory_gb", 1, MAX_MEMORY_GB)
        price = check_table(path, f"{where} price", entry.get("price", {}), tuple(map(str, DURATIONS)))
        prices = {int(days): _money(amount, path, f"{where} price.{days}") for days, amount in price.items()}
        catalog[name] = Card(name, per_lot, prices)
    return catalog


def _catalog_path(path: Path, value: object) -> Path:
    root = path.parent.resolve()
    if not isinstance(value, str) or not value.strip():
        raise ProjectFileError(f"{path}: catalog must be a file name, got {type_name(value)}.", hint='catalog = "catalog.toml"', path=path)
    catalog = (root / value).resolve()
    if not catalog.is_relative_to(root):
        raise ProjectFileError(
            f"{path}: catalog = {value!r} lies outside the project folder {root}.",
            hint="Keep the price list in the project (copy it in), so that the plan travels with it.",
            path=path,
            value=value,
        )
    return catalog


def _array(raw: dict, key: str, path: Path) -> list:
    entries = raw.get(key, [])
    if not isinstance(entries, list):
        raise ProjectFileError(f"{path}: {key} must be an array of tables ([[{key}]]).", hint=f"Write each one as [[{key}]].", path=path)
    return entries


def _step(entry: object, index: int, path: Path, lots: int) -> Step:
    where = f"[[steps]] #{index}"
    entry = check_table(path, where, entry, STEP_KEYS, required=("name", "hours"))
    name = _text(entry["name"], path, f"{where} name")
    hours = _number(entry["hours"], path, f"step {name!r} hours", MAX_HOURS)
    lot = _whole(entry.get("lot", 1), path, f"step {name!r} lot", 1, lots)
    machine = entry.get("machine", True)
    if not isinstance(machine, bool):
        raise ProjectFileError(
            f"{path}: step {name!r} machine must be true or false, got {type_name(machine)}.", hint="machine = false", path=path
        )
    priority = entry.get("priority", "essential")
    if priority not in PRIORITIES:
        raise ProjectFileError(
            f"{path}: step {name!r} has priority {priority!r}.",
            hint=f"Use one of: {', '.join(PRIORITIES)}.",
            path=path,
            value=str(priority),
        )
    runs = entry.get("runs", ())
    runs = (runs,) if isinstance(runs, str) else runs
    if not isinstance(runs, (list, tuple)) or not all(isinstance(pattern, str) for pattern in runs):
        raise ProjectFileError(f"{path}: step {name!r} runs must be a pattern or a list of them.", hint='runs = "pilot-*"', path=path)
    return Step(name, hours, lot, machine, priority, tuple(runs))


def _expense(entry: object, index: int, path: Path) -> tuple[str, Decimal]:
    where = f"[[expenses]] #{index}"
    entry = check_table(path, where, entry, EXPENSE_KEYS, required=EXPENSE_KEYS)
    name = _text(entry["name"], path, f"{where} name")
    return name, _money(entry["usd"], path, f"expense {name!r}")


def _text(value: object, path: Path, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ProjectFileError(
            f"{path}: {where} must be text, got {type_name(value)}.", hint='For example name = "control run".', path=path
        )
    return value


def _money(value: object, path: Path, where: str) -> Decimal:
    return _ranged(value, path, where, 0, MAX_USD, what="an amount of USD", hint='Write it as "47.14" (a non-negative number).')


def _number(value: object, path: Path, where: str, highest: int) -> Decimal:
    return _ranged(value, path, where, 0, highest, what="a number of hours", hint="Machine-busy hours, e.g. hours = 12.")


def _whole(value: object, path: Path, where: str, lowest: int = 0, highest: int = MAX_INT) -> int:
    return int(_ranged(value, path, where, lowest, highest, what="a whole number", hint="For example days = 3, lots = 1."))


def _ranged(value: object, path: Path, where: str, lowest, highest, *, what: str, hint: str) -> Decimal:
    """``value`` as a finite number of its kind within [lowest, highest]; the error says which of the three it is not."""
    amount = _decimal(value, text_allowed=what.endswith("USD"))
    if amount is None or (what == "a whole number" and amount != amount.to_integral_value()):
        problem = f"must be {what}, got {type_name(value) if amount is None and not isinstance(value, Decimal) else _shown(value)}"
    elif not lowest <= amount <= highest:
        problem = f"= {_shown(value)} is outside {lowest} to {highest}"
    else:
        return amount
    raise ProjectFileError(f"{path}: {where} {problem}.", hint=hint, path=path, value=str(value))


def _decimal(value: object, *, text_allowed: bool) -> Decimal | None:
    """A finite Decimal from a TOML number (or, for money, text); None for anything else."""
    if isinstance(value, bool) or not isinstance(value, (int, Decimal, str)) or (isinstance(value, str) and not text_allowed):
        return None
    try:
        amount = Decimal(value.strip()) if isinstance(value, str) else Decimal(value)
    except ArithmeticError:
        return None
    return amount if amount.is_finite() else None


def _shown(value: object) -> str:
    """A value as the user wrote it: '3' for text, 1E+400 and NaN for numbers, 'a table' for the rest."""
    if isinstance(value, str):
        return repr(value)
    return str(value) if isinstance(value, (int, Decimal)) and not isinstance(value, bool) else type_name(value)


def _read_toml(path: Path, hint: str) -> dict:
    return read_toml(path, hint=hint, parse_float=Decimal)


# -- the check --------------------------------------------------------------------------
@dataclass
class Schedule:
    busy_by_lot: dict[int, Decimal]
    human_hours: Decimal
    window: int

    @property
    def longest(self) -> Decimal:
        return max(self.busy_by_lot.values(), default=Decimal(0))

    @property
    def slack(self) -> Decimal:
        return self.window - self.longest

    @property
    def fits(self) -> bool:
        return self.longest <= self.window


def schedule(campaign: Campaign) -> Schedule:
    busy = {lot: Decimal(0) for lot in range(1, campaign.lots + 1)}
    human = Decimal(0)
    for step in campaign.steps:
        if step.machine:
            busy[step.lot] += step.hours  # steps on one card follow each other
        else:
            human += step.hours
    return Schedule(busy, human, campaign.window_hours)


def suggestion(campaign: Campaign, sched: Schedule) -> str:
    longer = [days for days in DURATIONS if days * 24 >= sched.longest]
    if not longer:
        return "no package is long enough: split the protocol or use more lots for independent steps"
    days = longer[0]
    price = campaign.card.prices.get(days)
    priced = f" ({money(price)} USD per lot)" if price is not None else " (no price in the catalog yet)"
    return f"consider the {days}-day package{priced} or a smaller protocol that still answers the question"


def planned_vs_actual(campaign: Campaign, rows: list) -> list[dict]:
    lines = []
    for step in campaign.steps:
        if not step.runs:
            continue
        matched = [row for row in rows if any(fnmatch.fnmatchcase(row.run_id, pattern) for pattern in step.runs)]
        seconds = sum((Decimal(str(row.seconds)) for row in matched if row.seconds is not None), Decimal(0))
        actual = (seconds / 3600).quantize(Decimal("0.001"))
        lines.append(
            {
                "step": step.name,
                "planned_hours": step.hours,
                "actual_hours": actual,
                "deviation_hours": actual - step.hours,
                "runs": [row.run_id for row in matched],
            }
        )
    return lines


def delivery_cost(campaign: Campaign, rows: list) -> dict:
    """Package ÷ accepted deliveries; a delivery is one input corpus with an accepted run."""
    accepted = [row for row in rows if row.status == "accepted"]
    deliveries = sorted({row.input_sha256 for row in accepted if row.input_sha256})
    spent = campaign.total + sum((amount for _, amount in campaign.expenses), Decimal(0))
    result = {"accepted_runs": len(accepted), "deliveries": len(deliveries), "package_usd": campaign.total, "spent_usd": spent}
    if deliveries:
        result["cost_per_delivery_usd"] = campaign.total / len(deliveries)
        result["reasons"] = []
    else:
        result["cost_per_delivery_usd"] = None
        result["reasons"] = [f"{row.run_id}: {row.status}" + (f" ({'; '.join(row.reasons)})" if row.reasons else "") for row in rows] or [
            "no run yet"
        ]
    return result


def money(amount: Decimal) -> str:
    """USD as written: cents at least, and a price given in fractions of a cent (47.145) kept
    whole, so a shown price times the lots is the shown total; a quotient is rounded to cents."""
    exact = amount.quantize(EXACT_USD, rounding=ROUND_HALF_UP)
    if exact != amount or exact == exact.quantize(CENT):
        return str(amount.quantize(CENT, rounding=ROUND_HALF_UP))
    return format(exact.normalize(), "f")


def hours(amount: Decimal) -> str:
    text = format(amount.normalize(), "f")
    return text
