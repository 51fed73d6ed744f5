"""Where the shipped data folders are: template/, images/, diagnostics/.

In a wheel they live under bundler/_data/ (pyproject's force-include); in a source
checkout or an editable install they are the top-level folders of the repository.
"""

from __future__ import annotations

from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
RESOURCES = ("template", "images", "diagnostics")


def resource_path(name: str) -> Path:
    if name not in RESOURCES:
        raise ValueError(f"unknown resource {name!r}")
    for candidate in (PACKAGE_DIR / "_data" / name, PACKAGE_DIR.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"bundler's {name}/ folder is missing from {PACKAGE_DIR}; reinstall bundler")
