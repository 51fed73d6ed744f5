"""tomllib on Python 3.11+, its backport tomli on 3.10: the one place that chooses."""

from __future__ import annotations

import sys
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10 only
    import tomli as tomllib

TOMLDecodeError = tomllib.TOMLDecodeError


def loads(text: str, **options: Any) -> dict[str, Any]:
    """tomllib.loads, with nesting deeper than its recursive parser follows a TOMLDecodeError too."""
    try:
        return tomllib.loads(text, **options)
    except RecursionError:
        raise TOMLDecodeError("its brackets nest deeper than any TOML file of bundler's does") from None


__all__ = ["TOMLDecodeError", "loads"]
