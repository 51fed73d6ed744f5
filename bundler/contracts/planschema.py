"""The order plan.toml and its catalog describe: what `bundler plan` prices and the diagnostics count.

The diagnostics (``bdiag.order``, inside the image, without bundler) read three things of
it: ``[package] card`` (a card the catalog lists), ``[package] lots`` and the catalog's
``cards_per_lot`` of that card; bundler (``evidence/campaign.py``) reads them too, with
the rest of the plan (days, steps, prices). The rules of these three live here, so that
an order one of them refuses the other refuses too. Each check answers None when the
value is fine, else what is wrong (words that follow the key's name).

Standard library only: copied into diagnostics/ (generated, see ``generate.py``).
"""

from __future__ import annotations

PLAN_FILE = "plan.toml"
DEFAULT_CATALOG = "catalog.toml"
MAX_LOTS = 10
MAX_CARDS_PER_LOT = 16
DEFAULT_CARDS_PER_LOT = 1


def whole_problem(value: object, lowest: int, highest: int, what: str) -> str | None:
    """A whole number (a TOML integer, not true/false) from ``lowest`` to ``highest``."""
    if isinstance(value, int) and not isinstance(value, bool) and lowest <= value <= highest:
        return None
    return f"must be a whole number of {what} from {lowest} to {highest}, got {value!r}"


def card_problem(value: object) -> str | None:
    return None if isinstance(value, str) and value.strip() else f"must name a card of the catalog, got {value!r}"


def lots_problem(value: object) -> str | None:
    return whole_problem(value, 1, MAX_LOTS, "lots")


def cards_per_lot_problem(value: object) -> str | None:
    return whole_problem(value, 1, MAX_CARDS_PER_LOT, "cards per lot")
