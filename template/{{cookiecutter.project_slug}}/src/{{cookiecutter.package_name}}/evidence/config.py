"""config/pilot.json: the pilot's parameters, checked key by key before any run folder exists.

Every key of SCHEMA is required unless listed as optional, an unknown key is refused (a
typo never passes silently), and a value of the wrong type or out of range is named with
its key and the file (exit 2). Paths are relative to the project folder and stay inside
it. The "model" and "training" sections belong to the model: pilot.py's PARAMETERS says
what they hold. "stop_rules" and each rule in it may be left out (the rule is then off).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from .errors import ConfigError

MOST = 10**9
RULES = ("non_finite_loss", "quality_below_threshold", "essential_input_missing", "checkpoint_not_reloadable")


class Section(dict):
    """An object holding exactly these keys (the ``optional`` ones may be left out)."""

    def __init__(self, fields: dict, optional: tuple = ()) -> None:
        super().__init__(fields)
        self.optional = frozenset(optional)


@dataclass(frozen=True)
class PilotConfig:
    path: Path
    root: Path
    raw: dict
    model_sections: tuple[str, ...] = ("model", "training")

    categories = property(lambda self: list(self.raw["categories"]))
    data_dir = property(lambda self: self.root / self.raw["data_dir"])
    manifest = property(lambda self: self.root / self.raw["manifest"])
    runs_dir = property(lambda self: self.root / self.raw["runs_dir"])
    parameters = property(lambda self: {name: self.raw[name] for name in self.model_sections})

    @property
    def sha256(self) -> str:
        """Hash of the parameters themselves (key order and spacing do not matter)."""
        return hashlib.sha256(json.dumps(self.raw, sort_keys=True, separators=(",", ":")).encode("utf-8")).hexdigest()


def load_config(path: Path, root: Path, parameters: dict) -> PilotConfig:
    path = Path(path) if Path(path).is_absolute() or Path(path).exists() else root / path
    if not path.is_file():
        raise ConfigError(f"configuration file {path} not found.", "Pass --config config/pilot.json from the project folder.")
    try:
        raw = json.loads(path.read_text(encoding="utf-8"), parse_constant=_not_json, object_pairs_hook=_unique_keys)
    except (ValueError, UnicodeDecodeError) as error:
        raise ConfigError(f"{path} is not valid JSON: {error}.", "Fix it at the position given; NaN and Infinity are not JSON.") from None
    try:
        _check(schema(parameters), raw, "")
        for low, high in (("limits.min_chars", "limits.max_chars"), ("expected_rejections", "expected_documents")):
            values = [_at(raw, low), _at(raw, high)]
            if values[0] > values[1]:
                raise _Problem(low, f"= {values[0]} is above {high} = {values[1]}")
    except _Problem as problem:
        raise ConfigError(f"{path}: {problem.key or 'the top level'} {problem.text}.", problem.hint) from None
    return PilotConfig(path=path.resolve(), root=root, raw=raw, model_sections=tuple(parameters))


def schema(parameters: dict) -> Section:
    model = {name: Section({key: _number(*spec) for key, spec in fields.items()}) for name, fields in parameters.items()}
    rules = Section({rule: _quality if rule == "quality_below_threshold" else _flag for rule in RULES}, optional=RULES)
    whole, limits = _number(int, 0, MOST), Section({"min_chars": _number(int, 0, MOST), "max_chars": _number(int, 1, MOST)})
    fields = {"categories": _names, "data_dir": _path, "manifest": _path, "runs_dir": _path, "expected_documents": _number(int, 1, MOST)}
    return Section({**fields, "expected_rejections": whole, "limits": limits, "stop_rules": rules, **model}, optional=("stop_rules",))


class _Problem(Exception):
    def __init__(self, key: str, text: str, hint: str = "Fix that key; a fresh `bundler new` project shows every one.") -> None:
        self.key, self.text, self.hint = key, text, hint


def _check(spec, value, key: str) -> None:
    if not isinstance(spec, Section):
        spec = spec(value)
        if isinstance(spec, str):
            raise _Problem(key, spec)
        if spec is None:
            return
    if not isinstance(value, dict):
        raise _Problem(key, f"must be an object, got {_shown(value)}")
    unknown = sorted(set(value) - set(spec))
    if unknown:
        raise _Problem(
            f"{key}.{unknown[0]}".lstrip("."), "is not a known key", f"Known keys{' in ' + key if key else ''}: {', '.join(spec)}."
        )
    for name, inner in spec.items():
        if name in value:
            _check(inner, value[name], f"{key}.{name}".lstrip("."))
        elif name not in spec.optional:
            raise _Problem(f"{key}.{name}".lstrip("."), "is missing", "Add it; a fresh `bundler new` project shows every key.")


def _number(kind: type, lowest, highest):
    def check(value):
        if isinstance(value, bool) or not isinstance(value, int if kind is int else (int, float)):
            return f"must be {'a whole number' if kind is int else 'a number'} from {lowest} to {highest}, got {_shown(value)}"
        return None if math.isfinite(value) and lowest <= value <= highest else f"= {value} is out of range: {lowest} to {highest}"

    return check


def _flag(value):
    return None if isinstance(value, bool) else f"must be true or false, got {_shown(value)}"


def _names(value):
    if not (isinstance(value, list) and value and all(isinstance(item, str) and item.strip() for item in value)):
        return f"must be a non-empty list of names, got {_shown(value)}"
    return "lists a name twice" if len(set(value)) != len(value) else None


def _path(value):
    if not isinstance(value, str) or not value.strip():
        return f"must be a path relative to the project folder, got {_shown(value)}"
    if PurePosixPath(value).is_absolute() or value.startswith(("~", "\\")) or re.match(r"^[A-Za-z]:", value):
        return f"= {value!r} is an absolute path: write it relative to the project folder, so that it survives a change of machine"
    if ".." in PurePosixPath(value.replace("\\", "/")).parts:
        return f"= {value!r} leads outside the project folder: keep the pilot's files inside it"
    return None


def _quality(value):
    if value is False:
        return None
    if isinstance(value, dict):
        return Section({"min_accuracy": _number(float, 0, 1), "check_set": _check_set}, optional=("check_set",))
    return f"must be false or an object with min_accuracy and check_set, got {_shown(value)}"


def _check_set(value):
    if value == "labelled" or (isinstance(value, list) and value and all(isinstance(item, str) for item in value)):
        return None
    return f'must be "labelled" or a list of document IDs, got {_shown(value)}'


def _shown(value) -> str:
    return f"the text {value!r}" if isinstance(value, str) else {list: "a list", dict: "an object"}.get(type(value), json.dumps(value))


def _at(raw: dict, key: str):
    for name in key.split("."):
        raw = raw[name]
    return raw


def _not_json(constant: str):
    raise ValueError(f"{constant} is not a number JSON allows")


def _unique_keys(pairs: list) -> dict:
    keys = [key for key, _ in pairs]
    twice = sorted({key for key in keys if keys.count(key) > 1})
    if twice:
        raise ValueError(f"key {twice[0]!r} appears twice in one object")
    return dict(pairs)
