"""config/pilot.json: parameters without secrets, every path relative to the project root."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from .errors import ConfigError

REQUIRED = ("categories", "data_dir", "manifest", "runs_dir", "expected_documents", "expected_rejections")


@dataclass(frozen=True)
class PilotConfig:
    path: Path
    root: Path
    raw: dict

    @property
    def categories(self) -> list[str]:
        return list(self.raw["categories"])

    @property
    def data_dir(self) -> Path:
        return self.root / self.raw["data_dir"]

    @property
    def manifest(self) -> Path:
        return self.root / self.raw["manifest"]

    @property
    def runs_dir(self) -> Path:
        return self.root / self.raw["runs_dir"]

    @property
    def expected_documents(self) -> int:
        return int(self.raw["expected_documents"])

    @property
    def expected_rejections(self) -> int:
        return int(self.raw["expected_rejections"])

    def section(self, name: str) -> dict:
        return dict(self.raw.get(name, {}))

    @property
    def sha256(self) -> str:
        """Hash of the parameters themselves (key order and spacing do not matter)."""
        canonical = json.dumps(self.raw, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def project_root() -> Path:
    """The project folder, found from this file at run time (never a machine's path)."""
    return Path(__file__).resolve().parents[2]


def load_config(path: Path, root: Path | None = None) -> PilotConfig:
    path = Path(path)
    root = Path(root) if root is not None else project_root()
    if not path.is_absolute() and not path.exists():
        path = root / path
    if not path.is_file():
        raise ConfigError(f"configuration file {path} not found.", "Pass --config config/pilot.json from the project folder.")
    path = path.resolve()
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise ConfigError(f"{path} is not valid JSON: {error}.", "Fix the syntax at the position given.") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{path} must hold a JSON object.", "See the keys in the project README.")
    _validate(path, raw)
    return PilotConfig(path=path, root=root, raw=raw)


def _validate(path: Path, raw: dict) -> None:
    missing = [key for key in REQUIRED if key not in raw]
    if missing:
        raise ConfigError(f"{path} lacks {', '.join(missing)}.", f"Add the keys: {', '.join(REQUIRED)}.")
    categories = raw["categories"]
    if not isinstance(categories, list) or not categories or not all(isinstance(c, str) and c for c in categories):
        raise ConfigError(f"{path}: categories must be a non-empty list of names.", 'For example ["invoice", "contract"].')
    if len(set(categories)) != len(categories):
        raise ConfigError(f"{path}: categories lists a name twice.", "Each allowed category appears once.")
    for key in ("data_dir", "manifest", "runs_dir"):
        value = raw[key]
        pure = PurePosixPath(str(value))
        if not isinstance(value, str) or pure.is_absolute() or ".." in pure.parts or ":" in str(value):
            raise ConfigError(
                f"{path}: {key} = {value!r} must be a path relative to the project root.",
                "Paths into a home folder or another machine do not survive a change of machine.",
            )
    count = raw["expected_documents"]
    if not isinstance(count, int) or isinstance(count, bool) or count <= 0:
        raise ConfigError(f"{path}: expected_documents must be a positive whole number, got {count!r}.", "The pilot has 12.")
