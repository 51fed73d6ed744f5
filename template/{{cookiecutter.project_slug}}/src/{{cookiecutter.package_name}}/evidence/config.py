"""config/pilot.json: the pilot's parameters, checked key by key before any run folder exists.

Every key below is required unless said otherwise, an unknown key is refused (a typo
never passes silently), and a value of the wrong type or out of range is named with its
key and the file (exit 2). Paths are relative to the project folder and stay inside it.
The "model" and "training" sections belong to the model: pilot.py's PARAMETERS says
what they hold. "stop_rules" and each rule in it are optional (a rule left out is off).
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
    expected_documents = property(lambda self: self.raw["expected_documents"])
    expected_rejections = property(lambda self: self.raw["expected_rejections"])
    limits = property(lambda self: self.raw["limits"])
    parameters = property(lambda self: {name: self.raw[name] for name in self.model_sections})

    @property
    def sha256(self) -> str:
        """Hash of the parameters themselves (key order and spacing do not matter)."""
        canonical = json.dumps(self.raw, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def load_config(path: Path, root: Path, parameters: dict) -> PilotConfig:
    path = Path(path)
    if not path.is_absolute() and not path.exists():
        path = root / path
    if not path.is_file():
        raise ConfigError(f"configuration file {path} not found.", "Pass --config config/pilot.json from the project folder.")
    try:
        raw = json.loads(path.read_text(encoding="utf-8"), parse_constant=_not_json, object_pairs_hook=_unique_keys)
    except (ValueError, UnicodeDecodeError) as error:
        raise ConfigError(f"{path} is not valid JSON: {error}.", "Fix it at the position given; NaN and Infinity are not JSON.") from None
    try:
        _check(schema(parameters), raw, "")
        _check_together(raw)
    except _Problem as problem:
        where = f"{problem.key} " if problem.key else "the top level "
        raise ConfigError(f"{path}: {where}{problem.text}.", problem.hint) from None
    return PilotConfig(path=path.resolve(), root=root, raw=raw, model_sections=tuple(parameters))


def schema(parameters: dict) -> Section:
    model = {name: Section({key: _number(*spec) for key, spec in fields.items()}) for name, fields in parameters.items()}
    flag = _of_type(bool, "true or false")
    return Section(
        {
            "categories": _names,
            "data_dir": _path,
            "manifest": _path,
            "runs_dir": _path,
            "expected_documents": _number(int, 1, MOST),
            "expected_rejections": _number(int, 0, MOST),
            "limits": Section({"min_chars": _number(int, 0, MOST), "max_chars": _number(int, 1, MOST)}),
            "stop_rules": Section({rule: _quality if rule == "quality_below_threshold" else flag for rule in RULES}, optional=RULES),
            **model,
        },
        optional=("stop_rules",),
    )


class _Problem(Exception):
    def __init__(self, key: str, text: str, hint: str = "Fix that key; a fresh `bundler new` project shows every one.") -> None:
        self.key, self.text, self.hint = key, text, hint


def _check(spec, value, key: str) -> None:
    if isinstance(spec, Section):
        if not isinstance(value, dict):
            raise _Problem(key, f"must be an object, got {_shown(value)}")
        unknown = sorted(set(value) - set(spec))
        if unknown:
            raise _Problem(_join(key, unknown[0]), "is not a known key", f"Known keys{' in ' + key if key else ''}: {', '.join(spec)}.")
        for name, inner in spec.items():
            if name in value:
                _check(inner, value[name], _join(key, name))
            elif name not in spec.optional:
                raise _Problem(_join(key, name), "is missing", "Add it; a fresh `bundler new` project shows every key.")
        return
    problem = spec(value)
    if isinstance(problem, Section):
        _check(problem, value, key)
    elif problem:
        raise _Problem(key, problem)


def _check_together(raw: dict) -> None:
    if raw["limits"]["min_chars"] > raw["limits"]["max_chars"]:
        raise _Problem("limits", "has min_chars above max_chars")
    if raw["expected_rejections"] > raw["expected_documents"]:
        raise _Problem("expected_rejections", "is above expected_documents")


def _number(kind: type, lowest, highest):
    wanted = "a whole number" if kind is int else "a number"

    def check(value):
        if isinstance(value, bool) or not isinstance(value, int if kind is int else (int, float)):
            return f"must be {wanted} from {lowest} to {highest}, got {_shown(value)}"
        if not (math.isfinite(value) and lowest <= value <= highest):
            return f"= {value} is out of range: {lowest} to {highest}"
        return None

    return check


def _of_type(kind: type, wanted: str):
    return lambda value: None if isinstance(value, kind) else f"must be {wanted}, got {_shown(value)}"


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
    if not isinstance(value, dict):
        return f"must be false or an object with min_accuracy and check_set, got {_shown(value)}"
    return Section({"min_accuracy": _number(float, 0, 1), "check_set": _check_set}, optional=("check_set",))


def _check_set(value):
    if value == "labelled" or (isinstance(value, list) and value and all(isinstance(item, str) for item in value)):
        return None
    return f'must be "labelled" or a list of document IDs, got {_shown(value)}'


def _shown(value) -> str:
    if isinstance(value, str):
        return f"the text {value!r}"
    if isinstance(value, (list, dict)):
        return "a list" if isinstance(value, list) else "an object"
    return json.dumps(value)


def _join(key: str, name: str) -> str:
    return f"{key}.{name}" if key else name


def _not_json(constant: str):
    raise ValueError(f"{constant} is not a number JSON allows")


def _unique_keys(pairs: list) -> dict:
    keys = [key for key, _ in pairs]
    twice = sorted({key for key in keys if keys.count(key) > 1})
    if twice:
        raise ValueError(f"key {twice[0]!r} appears twice in one object")
    return dict(pairs)
