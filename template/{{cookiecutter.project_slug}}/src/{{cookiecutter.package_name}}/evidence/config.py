"""config/pilot.json: the pilot's parameters, checked key by key before any run folder exists.

The schema is ``contracts/pilotconfig.py`` (a copy of bundler's own, so that `bundler check`
refuses what the pilot refuses): every key required unless optional, an unknown or
repeated key refused, a value of the wrong type or out of range named with its key and
the file (exit 2). The "model" and "training" sections are what pilot.py's PARAMETERS says.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from .contracts.pilotconfig import ConfigProblem, check_config, parse_config
from .errors import ConfigError


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
        raw = parse_config(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as error:
        raise ConfigError(f"{path} is not valid JSON: {error}.", "Save it as UTF-8 JSON.") from None
    except ConfigProblem as problem:
        raise ConfigError(f"{path} {problem.text}.", problem.hint) from None
    try:
        check_config(raw, parameters)
    except ConfigProblem as problem:
        raise ConfigError(f"{path}: {problem.key or 'the top level'} {problem.text}.", problem.hint) from None
    return PilotConfig(path=path.resolve(), root=root, raw=raw, model_sections=tuple(parameters))
