"""`bundler init` from start to end: refuse what cannot be adopted, read the sources,
infer the Target, survey the layout, plan the files, write them (or, with --dry-run, say
what would be written)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from bundler.adopt import files
from bundler.adopt.imports import undeclared
from bundler.adopt.infer import Flags, Inferred, infer
from bundler.adopt.model import SourceRead
from bundler.adopt.sources import Sources, read_all
from bundler.adopt.survey import Entry, Layout, find_entry, survey
from bundler.adopt.writer import Planned, block, write
from bundler.errors import ExistsError, ProjectFileError, UsageError
from bundler.image.context import DOCKERIGNORE, clean_patterns, is_ignored
from bundler.resources import resource_path
from bundler.target.bundle import BUNDLE_FILE
from bundler.target.syspackages import APT_TXT, read_apt_txt
from bundler.target.table_file import load_table

TEMPLATE_FILES = ("plan.toml", "catalog.toml")
NEEDED = ["bundle.toml", "requirements-rebuild.txt", "requirements-rebuild.json", "diagnostics/run.py"]


@dataclass
class Adoption:
    root: Path
    sources: Sources
    inferred: Inferred
    layout: Layout
    entry: Entry
    requirements: str  # the lock's input file
    planned: Planned
    name: str
    package: str
    notes: list[str] = field(default_factory=list)
    undeclared: list[str] = field(default_factory=list)  # modules the code imports that no requirement provides


def adopt(project: Path, flags: Flags, *, entry: str | None = None, extras: list[str] | None = None, dry_run: bool = False) -> Adoption:
    root = _check_folder(project)
    sources = read_all(root, extras or [])
    layout = survey(root)
    if not sources.found and not layout.python_files and not layout.notebooks:
        raise ProjectFileError(
            f"{root} has nothing to adopt: no Python file, notebook or dependency file (requirements*.txt, pyproject.toml, setup.py, "
            "setup.cfg, Pipfile, environment.yml).",
            hint="Run bundler init in the repository's root folder, or start a new project with `bundler new DEST`.",
            path=root,
        )
    inferred = infer(sources, root, load_table(), flags)
    found_entry = find_entry(layout, sources, entry, installed=sources.package is not None)
    adoption = Adoption(root, sources, inferred, layout, found_entry, "", Planned(), *_names(root, sources, layout))
    adoption.requirements = _plan_requirements(adoption)
    adoption.undeclared = undeclared(root, layout, sources.chosen)
    adoption.notes.extend(_apt_txt_notes(root))
    _plan_files(adoption)
    if not dry_run:
        write(root, adoption.planned)
    return adoption


def _apt_txt_notes(root: Path) -> list[str]:
    """What `bundler build` will do with the repository's apt.txt (repo2docker's list of Debian packages)."""
    try:
        names = [name for _, name in read_apt_txt(root)]
    except ProjectFileError as error:
        return [f"{error.message} `bundler build` refuses it until it is fixed ({error.hint})"]
    if not names:
        return []
    return [
        f"{APT_TXT} names {len(names)} Debian package(s), installed in the dependency image by `bundler build`: {', '.join(names)} "
        "(more go in bundle.toml [build] system_packages)"
    ]


def _check_folder(project: Path) -> Path:
    root = Path(project)
    if not root.is_dir():
        raise UsageError(
            f"{root} is not a folder.", hint="Pass the repository's folder (default: the current one).", path=root, value=str(root)
        )
    root = root.resolve()
    if (root / BUNDLE_FILE).exists():
        raise ExistsError(
            f"{root} is already a bundler project: {root / BUNDLE_FILE} exists. Nothing was changed.",
            hint="Use `bundler check`, `bundler lock` and `bundler build` on it; to adopt it again, move bundle.toml away first.",
            path=root / BUNDLE_FILE,
        )
    if not any(root.iterdir()):
        raise ProjectFileError(
            f"{root} is empty: there is no repository to adopt.",
            hint="Run bundler init in a repository's folder, or start a new project with `bundler new DEST`.",
            path=root,
        )
    return root


def _names(root: Path, sources: Sources, layout: Layout) -> tuple[str, str]:
    package_source = sources.package
    name = next((s.name for s in sources.found if s.name), "") or root.name
    package = ""
    if package_source is not None or len(layout.packages) == 1:
        wanted = re.sub(r"[-.]+", "_", name).lower()
        package = wanted if wanted in layout.packages else (layout.packages[0] if len(layout.packages) == 1 else "")
    return name, package


def _plan_requirements(adoption: Adoption) -> str:
    chosen = adoption.sources.chosen
    if chosen is not None and chosen.kind == "requirements":
        return chosen.file
    if chosen is None:
        adoption.notes.append("no dependency file was found: requirements.in starts empty (torch comes from the Target)")
        empty = SourceRead("none", "(no dependency file)")
        adoption.planned.files[files.REQUIREMENTS_IN] = files.requirements_in(empty, "nothing to read")
    else:
        adoption.planned.files[files.REQUIREMENTS_IN] = files.requirements_in(chosen, adoption.sources.reason)
    return files.REQUIREMENTS_IN


def _plan_files(adoption: Adoption) -> None:
    root, planned, layout = adoption.root, adoption.planned, adoption.layout
    entry = adoption.entry
    note = "" if entry.command else "set entry: bundler init found no command this project runs (pass --entry CMD, or write it here)"
    if entry.command and entry.how != "--entry":
        note = f"guessed from {entry.how}"
    planned.files[BUNDLE_FILE] = files.bundle_toml(
        adoption.name,
        adoption.package,
        entry.command,
        note,
        adoption.inferred.target,
        adoption.requirements,
        adoption.inferred.guesses,
        install_project=adoption.sources.package is not None,
    )
    template = resource_path("template") / "{{cookiecutter.project_slug}}"
    for name in TEMPLATE_FILES:
        if not (root / name).exists():
            planned.files[name] = (template / name).read_text(encoding="utf-8")
        else:
            planned.untouched.append(f"{name} (exists; left as it is)")
    if not (root / "diagnostics").exists():
        planned.folders["diagnostics"] = resource_path("diagnostics")
    else:
        planned.untouched.append("diagnostics/ (exists; the shipped diagnostics are used unless it holds run.py)")
    if not (root / "runs" / ".gitignore").exists():
        planned.files["runs/.gitignore"] = (
            "# Trial outputs stay out of version control: copy them out with `bundler runs export`.\n*\n!.gitignore\n"
        )
    planned.untouched += [
        f"{name} (your own; `bundler build` writes its own Dockerfile and leaves this one in the code layer)" for name in layout.dockerfiles
    ]
    _plan_dockerignore(adoption)


def _plan_dockerignore(adoption: Adoption) -> None:
    root, planned, layout = adoption.root, adoption.planned, adoption.layout
    path = root / DOCKERIGNORE
    if not path.exists():
        planned.files[DOCKERIGNORE] = files.dockerignore(layout, [*NEEDED, adoption.requirements])
        return
    text = path.read_text(encoding="utf-8", errors="replace")
    patterns = clean_patterns(text.splitlines())
    code = layout.python_files
    if code and all(is_ignored(patterns, name) for name in code):
        planned.untouched.append(
            f"{DOCKERIGNORE} (sends no code into the image: every .py file is excluded; left as it is, edit it yourself)"
        )
        return
    missing = files.missing_ignores(text)
    if missing:
        planned.appends[DOCKERIGNORE] = block(missing)
    if layout.left_out:
        adoption.notes.append(
            f"{DOCKERIGNORE} exists: consider excluding {', '.join(layout.left_out)} (data or outputs the code does not name)"
        )
