"""config/pilot.json's schema: the generated pilot refuses what it refuses, and `bundler check` too.

Every key of the schema is required unless listed as optional, an unknown key is refused
(a typo never passes silently), a key given twice in one object is refused, and a value
of the wrong type or out of range is named with its key. Paths are relative to the
project folder and stay inside it. The "model" and "training" sections belong to the
model: the pilot's ``PARAMETERS`` (``{section: {key: (int|float, lowest, highest)}}``)
says what they hold. "stop_rules" and each rule in it may be left out (the rule is off).

Standard library only: copied into the generated project (generated, see ``generate.py``).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from pathlib import PurePosixPath
from typing import Any

MOST = 10**9
RULES = ("non_finite_loss", "quality_below_threshold", "essential_input_missing", "checkpoint_not_reloadable")
DEFAULT_HINT = "Fix that key; a fresh `bundler new` project shows every one."
Parameters = dict[str, dict[str, tuple[type, float, float]]]


class ConfigProblem(Exception):
    """What is wrong with a pilot config: the key (dotted, "" for the top level), the text, a hint."""

    def __init__(self, key: str, text: str, hint: str = DEFAULT_HINT) -> None:
        super().__init__(f"{key or 'the top level'} {text}")
        self.key, self.text, self.hint = key, text, hint


class Section(dict):
    """An object holding exactly these keys (the ``optional`` ones may be left out)."""

    def __init__(self, fields: dict, optional: tuple = ()) -> None:
        super().__init__(fields)
        self.optional = frozenset(optional)


Check = Callable[[Any], "str | None | Section"]


def parse_config(text: str) -> Any:
    """The JSON of a config, a key given twice, NaN or nesting past the parser refused (ConfigProblem)."""
    try:
        return json.loads(text, parse_constant=_not_json, object_pairs_hook=_unique_keys)
    except RecursionError:
        raise ConfigProblem("", "is not valid JSON: it nests deeper than a config can", "Write the config as a plain object.") from None
    except ValueError as error:
        raise ConfigProblem("", f"is not valid JSON: {error}", "Fix it at the position given; NaN and Infinity are not JSON.") from None


def check_config(raw: Any, parameters: Parameters) -> None:
    """ConfigProblem naming the first key that the pilot refuses; None when the pilot accepts ``raw``."""
    _check(schema(parameters), raw, "")
    for low, high in (("limits.min_chars", "limits.max_chars"), ("expected_rejections", "expected_documents")):
        values = [_at(raw, low), _at(raw, high)]
        if values[0] > values[1]:
            raise ConfigProblem(low, f"= {values[0]} is above {high} = {values[1]}")


def schema(parameters: Parameters) -> Section:
    model = {name: Section({key: _number(*spec) for key, spec in fields.items()}) for name, fields in parameters.items()}
    rules = Section({rule: _quality if rule == "quality_below_threshold" else _flag for rule in RULES}, optional=RULES)
    whole, limits = _number(int, 0, MOST), Section({"min_chars": _number(int, 0, MOST), "max_chars": _number(int, 1, MOST)})
    fields = {"categories": _names, "data_dir": _path, "manifest": _path, "runs_dir": _path, "expected_documents": _number(int, 1, MOST)}
    return Section({**fields, "expected_rejections": whole, "limits": limits, "stop_rules": rules, **model}, optional=("stop_rules",))


def _check(spec: Section | Check, value: Any, key: str) -> None:
    if not isinstance(spec, Section):
        found = spec(value)
        if isinstance(found, str):
            raise ConfigProblem(key, found)
        if found is None:
            return
        spec = found
    if not isinstance(value, dict):
        raise ConfigProblem(key, f"must be an object, got {_shown(value)}")
    unknown = sorted(set(value) - set(spec))
    if unknown:
        raise ConfigProblem(
            f"{key}.{unknown[0]}".lstrip("."), "is not a known key", f"Known keys{' in ' + key if key else ''}: {', '.join(spec)}."
        )
    for name, inner in spec.items():
        if name in value:
            _check(inner, value[name], f"{key}.{name}".lstrip("."))
        elif name not in spec.optional:
            raise ConfigProblem(f"{key}.{name}".lstrip("."), "is missing", "Add it; a fresh `bundler new` project shows every key.")


def _number(kind: type, lowest: float, highest: float) -> Check:
    def check(value: Any) -> str | None:
        if isinstance(value, bool) or not isinstance(value, int if kind is int else (int, float)):
            return f"must be {'a whole number' if kind is int else 'a number'} from {lowest} to {highest}, got {_shown(value)}"
        return None if math.isfinite(value) and lowest <= value <= highest else f"= {value} is out of range: {lowest} to {highest}"

    return check


def _flag(value: Any) -> str | None:
    return None if isinstance(value, bool) else f"must be true or false, got {_shown(value)}"


def _names(value: Any) -> str | None:
    if not (isinstance(value, list) and value and all(isinstance(item, str) and item.strip() for item in value)):
        return f"must be a non-empty list of names, got {_shown(value)}"
    return "lists a name twice" if len(set(value)) != len(value) else None


def _path(value: Any) -> str | None:
    if not isinstance(value, str) or not value.strip():
        return f"must be a path relative to the project folder, got {_shown(value)}"
    if PurePosixPath(value).is_absolute() or value.startswith(("~", "\\")) or re.match(r"^[A-Za-z]:", value):
        return f"= {value!r} is an absolute path: write it relative to the project folder, so that it survives a change of machine"
    if ".." in PurePosixPath(value.replace("\\", "/")).parts:
        return f"= {value!r} leads outside the project folder: keep the pilot's files inside it"
    return None


def _quality(value: Any) -> str | None | Section:
    if value is False:
        return None
    if isinstance(value, dict):
        return Section({"min_accuracy": _number(float, 0, 1), "check_set": _check_set}, optional=("check_set",))
    return f"must be false or an object with min_accuracy and check_set, got {_shown(value)}"


def _check_set(value: Any) -> str | None:
    if value == "labelled" or (isinstance(value, list) and value and all(isinstance(item, str) for item in value)):
        return None
    return f'must be "labelled" or a list of document IDs, got {_shown(value)}'


def _shown(value: Any) -> str:
    if isinstance(value, str):
        return f"the text {value!r}"
    if isinstance(value, list):
        return "a list"
    return "an object" if isinstance(value, dict) else json.dumps(value)


def _at(raw: dict, key: str) -> Any:
    for name in key.split("."):
        raw = raw[name]
    return raw


def _not_json(constant: str) -> None:
    raise ValueError(f"{constant} is not a number JSON allows")


def _unique_keys(pairs: list) -> dict:
    keys = [key for key, _ in pairs]
    twice = sorted({key for key in keys if keys.count(key) > 1})
    if twice:
        raise ValueError(f"key {twice[0]!r} appears twice in one object")
    return dict(pairs)
