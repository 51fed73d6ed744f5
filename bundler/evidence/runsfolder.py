"""Where a project's runs live: the runs folder (inside the project) and a run's folder by ID.

A generated pilot project names its runs folder in config/pilot.json (``runs_dir``); any
other bundler project (bundle.toml, e.g. an adopted repository) keeps its runs in runs/.
A run ID is a folder name of the runs folder and nothing else.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from bundler.contracts.runid import is_run_id
from bundler.errors import ProjectFileError, UsageError
from bundler.fsutil import read_json

PILOT_CONFIG = "config/pilot.json"
BUNDLE_FILE = "bundle.toml"


def runs_dir(project: Path) -> Path:
    """The project's runs folder: config/pilot.json's ``runs_dir`` in a pilot project, else runs/
    of a bundler project; it must lie inside the project."""
    project = Path(project)
    if not project.is_dir():
        raise UsageError(
            f"project folder {project} does not exist.", hint="Pass the project folder (it holds config/ and runs/).", path=project
        )
    config = project / PILOT_CONFIG
    if not config.is_file():
        if (project / BUNDLE_FILE).is_file():
            return project / "runs"
        raise ProjectFileError(
            f"{project} is not a pilot project or a bundler project: neither {config} nor {project / BUNDLE_FILE} found.",
            hint="Run this in the project folder (made by `bundler new` or `bundler init`), or pass it (--project PROJECT for decide).",
            path=config,
        )
    document = read_json(config, hint="Fix its syntax; it names the runs folder (runs_dir).")
    name = document.get("runs_dir", "runs") if isinstance(document, dict) else None
    pure = PurePosixPath(name) if isinstance(name, str) else None
    if pure is None or not name.strip() or pure.is_absolute() or ".." in pure.parts:
        raise ProjectFileError(
            f"{config}: runs_dir = {name!r} is not a folder inside the project.",
            hint='Write a path relative to the project folder, e.g. "runs_dir": "runs".',
            path=config,
            value=str(name),
        )
    return project / name


def run_folder(project: Path, run_id: str) -> Path:
    """The folder of run ``run_id``: a name of the runs folder, never a path (../x, /abs) out of it."""
    if not is_run_id(run_id):
        raise UsageError(
            f"{run_id!r} is not a run ID.",
            hint="A run ID is a folder name under runs/: letters, digits, '.', '_' and '-'. `bundler runs summary` lists them.",
            value=run_id,
        )
    return runs_dir(project) / run_id


def confined_runs_dir(project: Path) -> Path:
    """The runs folder, refused when it (or a link on the way) leads out of the project."""
    folder = runs_dir(project)
    if not folder.resolve().is_relative_to(Path(project).resolve()):
        raise ProjectFileError(
            f"the runs folder {folder} leads out of the project {project} (a link to {folder.resolve()}).",
            hint="Make runs/ a folder of the project (not a link elsewhere): evidence stays with its project.",
            path=folder,
        )
    return folder


def project_of(run_dir: Path) -> Path | None:
    """The project a run folder belongs to: the nearest folder above it holding bundle.toml, when
    its runs folder is the one the run lies in (an exported copy elsewhere has none)."""
    folder = Path(run_dir).resolve()
    for candidate in folder.parents:
        if (candidate / BUNDLE_FILE).is_file():
            try:
                return candidate if runs_dir(candidate).resolve() == folder.parent else None
            except (ProjectFileError, UsageError):
                return None
    return None
