"""What was paid for: plan.toml's [package] (card, lots) and the catalog's cards per lot.

The catalog (catalog.toml beside plan.toml unless plan.toml names another) is the one
place that says how many cards a lot holds (a B200 lot holds two): `bundler plan`
prices the order from it, and the diagnostics count the GPUs they should see from it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import cast

from bdiag.contracts.planschema import DEFAULT_CARDS_PER_LOT, DEFAULT_CATALOG, PLAN_FILE, card_problem, cards_per_lot_problem, lots_problem

FIX_HINT = "Fix [package] card and lots in {plan} (`bundler plan` checks the whole plan where bundler is installed)."


class OrderError(ValueError):
    def __init__(self, message: str, hint: str) -> None:
        super().__init__(message)
        self.message, self.hint = message, hint


@dataclass(frozen=True)
class Order:
    plan: str
    catalog: str
    card: str
    lots: int
    cards_per_lot: int

    @property
    def cards(self) -> int:
        return self.lots * self.cards_per_lot

    def describe(self) -> str:
        lots = f"{self.lots} lot{'s' if self.lots != 1 else ''}"
        per_lot = f" × {self.cards_per_lot} cards per lot" if self.cards_per_lot != 1 else ""
        return f"{lots} of {self.card}{per_lot} = {self.cards} card{'s' if self.cards != 1 else ''}"

    def as_dict(self) -> dict:
        return {
            "plan": self.plan,
            "catalog": self.catalog,
            "card": self.card,
            "lots": self.lots,
            "cards_per_lot": self.cards_per_lot,
            "cards": self.cards,
        }


def read_order(root: str, load_toml) -> Order | None:
    """The order of the project at ``root``; None without a plan.toml. Raises OrderError."""
    plan = os.path.join(root, PLAN_FILE)
    if not os.path.lexists(plan):
        return None
    if not os.path.isfile(plan):
        raise OrderError(f"{plan} is not a readable file (a folder, or a link to nothing).", FIX_HINT.format(plan=plan))
    data = _read(plan, load_toml, FIX_HINT.format(plan=plan))
    package = data.get("package")
    if not isinstance(package, dict):
        raise OrderError(f"{plan} has no [package] table.", FIX_HINT.format(plan=plan))
    card, lots = package.get("card"), package.get("lots")
    for key, problem in (("card", card_problem(card)), ("lots", lots_problem(lots))):  # bundler's own rules (contracts/planschema.py)
        if problem:
            raise OrderError(f"{plan}: [package] {key} {problem}.", FIX_HINT.format(plan=plan))
    catalog = os.path.normpath(os.path.join(os.path.dirname(plan), str(data.get("catalog", DEFAULT_CATALOG))))
    card, lots = cast(str, card), cast(int, lots)  # what the checks above let through
    per_lot = _cards_per_lot(catalog, card, load_toml, plan)
    return Order(plan=plan, catalog=catalog, card=card, lots=lots, cards_per_lot=per_lot)


def _cards_per_lot(catalog: str, card: str, load_toml, plan: str) -> int:
    hint = f'The catalog says how many cards a lot of {card} holds: add [cards."{card}"] cards_per_lot = 1 (B200: 2) to {catalog}.'
    if not os.path.isfile(catalog):
        raise OrderError(f"{plan} names the catalog {catalog}, which does not exist.", hint)
    cards = _read(catalog, load_toml, hint).get("cards")
    entry = cards.get(card) if isinstance(cards, dict) else None
    if not isinstance(entry, dict):
        known = ", ".join(sorted(cards)) if isinstance(cards, dict) else "none"
        raise OrderError(f"{plan} orders {card!r}, which the catalog {catalog} does not list (it lists: {known}).", hint)
    per_lot = entry.get("cards_per_lot", DEFAULT_CARDS_PER_LOT)
    problem = cards_per_lot_problem(per_lot)
    if problem:
        raise OrderError(f'{catalog}: cards."{card}".cards_per_lot {problem}.', hint)
    return per_lot


def _read(path: str, load_toml, hint: str) -> dict:
    try:
        with open(path, "rb") as handle:
            return load_toml(handle.read().decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as error:  # TOMLDecodeError is a ValueError
        raise OrderError(f"{path} does not parse as TOML: {error}.", hint) from None
    except OSError as error:
        raise OrderError(f"{path} cannot be read: {error.strerror or error}.", hint) from None
