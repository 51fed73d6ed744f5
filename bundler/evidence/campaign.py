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

from bundler.errors import ProjectFileError
from bundler.fsutil import read_toml

PLAN_FILE = "plan.toml"
DEFAULT_CATALOG = "catalog.toml"
DURATIONS = (3, 7, 30)
MAX_LOTS = 10
PRIORITIES = ("essential", "useful", "exploratory")
CENT = Decimal("0.01")


@dataclass(frozen=True)
class Card:
    name: str
    cards_per_lot: int
    memory_gb: int | None
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
def load_campaign(project: Path, *, priced: bool = True) -> Campaign:
    """plan.toml and its catalog, checked; ``priced=False`` for readers of the order alone
    (card, lots), such as `bundler job`, which need no price for the chosen duration."""
    path = Path(project) / PLAN_FILE
    raw = _read_toml(path, "`bundler new` writes one; copy it from a new project or write [package] card/days/lots and [[steps]].")
    catalog_path = (path.parent / str(raw.get("catalog", DEFAULT_CATALOG))).resolve()
    catalog = load_catalog(catalog_path)
    package = raw.get("package")
    if not isinstance(package, dict):
        raise ProjectFileError(
            f"{path} lacks a [package] table.", hint='Add [package] with card = "RTX 4090", days = 3, lots = 1.', path=path
        )
    card_name = package.get("card")
    if card_name not in catalog:
        raise ProjectFileError(
            f"{path}: card {card_name!r} is not in the catalog {catalog_path}.",
            hint=f"Known cards: {', '.join(catalog)}. Add it to the catalog with its price if you have an offer for it.",
            path=path,
            value=card_name,
        )
    card = catalog[card_name]
    days = _whole(package.get("days"), path, "package.days")
    if days not in DURATIONS:
        raise ProjectFileError(
            f"{path}: package.days = {days} is not a package length.", hint="Packages last 3, 7 or 30 days.", path=path, value=days
        )
    lots = _whole(package.get("lots"), path, "package.lots")
    if not 1 <= lots <= MAX_LOTS:
        raise ProjectFileError(
            f"{path}: package.lots = {lots} is outside 1 to {MAX_LOTS}.",
            hint="Order between 1 and 10 lots (a B200 lot holds two cards).",
            path=path,
            value=lots,
        )
    if priced and days not in card.prices:
        raise ProjectFileError(
            f"the catalog {catalog_path} has no {days}-day price for {card.name}.",
            hint=f'Add it under [cards."{card.name}".price] as {days} = "<USD per lot>" from the offer you see; priced durations: '
            f"{', '.join(map(str, sorted(card.prices))) or 'none'}.",
            path=catalog_path,
        )
    steps = [_step(entry, index, path, lots) for index, entry in enumerate(raw.get("steps", []), 1)]
    expenses = [_expense(entry, path) for entry in raw.get("expenses", [])]
    return Campaign(path, catalog_path, card, days, lots, steps, expenses, catalog)


def load_catalog(path: Path) -> dict[str, Card]:
    raw = _read_toml(
        path,
        'The catalog lists prices in USD per lot: [cards."RTX 4090"] cards_per_lot = 1, price = { 3 = "47.14", 7 = "110", 30 = "390" }.',
    )
    cards = raw.get("cards")
    if not isinstance(cards, dict) or not cards:
        raise ProjectFileError(f'{path} lists no [cards."NAME"] table.', hint="Add at least the card you plan to rent.", path=path)
    catalog = {}
    for name, entry in cards.items():
        if not isinstance(entry, dict):
            raise ProjectFileError(f"{path}: cards.{name} must be a table.", hint="See the RTX 4090 example.", path=path)
        per_lot = _whole(entry.get("cards_per_lot", 1), path, f'cards."{name}".cards_per_lot')
        if per_lot < 1:
            raise ProjectFileError(
                f'{path}: cards."{name}".cards_per_lot must be at least 1.', hint="A lot holds one card (B200: two).", path=path
            )
        prices = {}
        for days, price in (entry.get("price") or {}).items():
            if not str(days).isdigit() or int(days) not in DURATIONS:
                raise ProjectFileError(
                    f'{path}: cards."{name}".price names {days!r} days.', hint="Prices exist for 3, 7 and 30 days.", path=path
                )
            prices[int(days)] = _money(price, path, f'cards."{name}".price.{days}')
        memory = entry.get("memory_gb")
        catalog[name] = Card(name, per_lot, int(memory) if isinstance(memory, (int, Decimal)) else None, prices)
    return catalog


def _step(entry: object, index: int, path: Path, lots: int) -> Step:
    if not isinstance(entry, dict) or not entry.get("name"):
        raise ProjectFileError(f"{path}: step {index} needs a name.", hint='[[steps]] name = "control run", hours = 12', path=path)
    name = str(entry["name"])
    hours = entry.get("hours")
    if isinstance(hours, bool) or not isinstance(hours, (int, Decimal)):
        raise ProjectFileError(
            f"{path}: step {name!r} needs hours as a number, got {hours!r}.",
            hint="Machine-busy hours, e.g. hours = 12.",
            path=path,
            value=hours,
        )
    hours = Decimal(hours)
    if hours < 0:
        raise ProjectFileError(
            f"{path}: step {name!r} has negative hours ({hours}).", hint="A duration is zero or more hours.", path=path, value=str(hours)
        )
    lot = _whole(entry.get("lot", 1), path, f"step {name!r} lot")
    if not 1 <= lot <= lots:
        raise ProjectFileError(
            f"{path}: step {name!r} runs on lot {lot}, the package has {lots}.",
            hint="Number lots from 1; two steps on one lot run one after the other.",
            path=path,
            value=lot,
        )
    priority = entry.get("priority", "essential")
    if priority not in PRIORITIES:
        raise ProjectFileError(
            f"{path}: step {name!r} has priority {priority!r}.", hint=f"Use one of: {', '.join(PRIORITIES)}.", path=path, value=priority
        )
    runs = entry.get("runs", ())
    runs = (runs,) if isinstance(runs, str) else tuple(str(r) for r in runs)
    return Step(name, hours, lot, bool(entry.get("machine", True)), priority, runs)


def _expense(entry: object, path: Path) -> tuple[str, Decimal]:
    if not isinstance(entry, dict) or "name" not in entry or "usd" not in entry:
        raise ProjectFileError(
            f"{path}: each [[expenses]] needs name and usd.", hint='[[expenses]] name = "storage", usd = "4.00"', path=path
        )
    amount = _money(entry["usd"], path, f"expense {entry['name']!r}")
    return str(entry["name"]), amount


def _money(value: object, path: Path, where: str) -> Decimal:
    try:
        amount = (
            value
            if isinstance(value, Decimal)
            else Decimal(str(value))
            if isinstance(value, (str, int)) and not isinstance(value, bool)
            else None
        )
    except ArithmeticError:
        amount = None
    if amount is None or not amount.is_finite() or amount < 0:
        raise ProjectFileError(
            f"{path}: {where} = {value!r} is not an amount of USD.",
            hint='Write it as "47.14" (a non-negative number).',
            path=path,
            value=str(value),
        )
    return amount


def _whole(value: object, path: Path, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, Decimal)) or Decimal(value) != int(value):
        raise ProjectFileError(
            f"{path}: {where} must be a whole number, got {value!r}.", hint="For example days = 3, lots = 1.", path=path, value=str(value)
        )
    return int(value)


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
        seconds = sum(Decimal(str(row.seconds)) for row in matched if isinstance(row.seconds, (int, float)))
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
    return str(amount.quantize(CENT, rounding=ROUND_HALF_UP))


def hours(amount: Decimal) -> str:
    text = format(amount.normalize(), "f")
    return text
