"""Where the shipped data folders are: template/, images/, diagnostics/.

In a wheel they live under bundler/_data/ (pyproject's force-include); in a source
checkout or an editable install they are the top-level folders of the repository.
"""

from __future__ import annotations

from pathlib import Path

from bundler.errors import ProjectFileError

PACKAGE_DIR = Path(__file__).resolve().parent
RESOURCES = ("template", "images", "diagnostics")


def resource_path(name: str) -> Path:
    if name not in RESOURCES:
        raise ValueError(f"unknown resource {name!r}")
    for candidate in (PACKAGE_DIR / "_data" / name, PACKAGE_DIR.parent / name):
        if candidate.is_dir():
            return candidate
    raise ProjectFileError(
        f"bundler's {name}/ folder is missing from this installation ({PACKAGE_DIR}).",
        hint="Reinstall bundler: pip install --force-reinstall from the source or wheel you used.",
        path=PACKAGE_DIR / "_data" / name,
    )


def diagnostics_folder(project: Path) -> Path:
    """The project's own copy of diagnostics/ when it has one, else the copy shipped with bundler."""
    own = Path(project) / "diagnostics"
    if (own / "run.py").is_file():
        return own
    return resource_path("diagnostics")
