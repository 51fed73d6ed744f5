"""`bundler update`: bring a project made from an older template up to the current one, keeping the user's edits.

The old render comes from the archive `bundler new` stored (base.py); a project made before
the archive existed has its recorded version re-rendered when this bundler ships that
version, and is refused otherwise. The new render is the installed template (or
``--template DIR``) with the recorded answers, plus the defaults of questions it added,
through the same render path as `bundler new`. merge.py decides each file; everything
written (files, the new archive, the answers file) goes in all or nothing, with backups.
The user's files are read from the working tree, so uncommitted changes count as theirs.
"""

from __future__ import annotations

import json
import re
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from bundler import __version__
from bundler.errors import ProjectFileError, UsageError
from bundler.fsutil import BACKUP_DIR, put_back_unfinished, read_json, replace_with_backups
from bundler.scaffold import (
    ANSWERS_FILE,
    answers_record,
    default_answers,
    render,
    template_version,
    validate_answers,
    version_order,
)
from bundler.scaffold import base as stored_base
from bundler.scaffold.merge import WRITES, Change, Sides, plan

NOT_MADE_HINT = (
    "bundler update only updates projects made by `bundler new`: it merges against the render the project started from. "
    "For another project, compare it with a fresh `bundler new` render by hand."
)


@dataclass
class UpdateResult:
    root: Path
    old_version: str
    new_version: str
    status: str  # current | planned | updated
    base_source: str  # stored | re-rendered
    changes: list[Change] = field(default_factory=list)
    backup_dir: str | None = None
    git_dirty: bool | None = None  # None: not a git work tree, or git could not tell
    put_back: list[str] = field(default_factory=list)  # interrupted updates undone first (their backup folders)
    stored: bool = False  # a current project made before the archive: its render stored now

    @property
    def conflicts(self) -> list[Change]:
        return [change for change in self.changes if change.kind == "conflict"]

    def as_dict(self) -> dict:
        return {
            "root": str(self.root),
            "status": self.status,
            "from_version": self.old_version,
            "to_version": self.new_version,
            "base": self.base_source,
            "changes": [change.as_dict() for change in self.changes],
            "conflicts": [change.path for change in self.conflicts],
            "backup_dir": self.backup_dir,
            "git_dirty": self.git_dirty,
            "put_back": self.put_back,
            "stored": self.stored,
        }


def update(project: Path | None, *, template: Path | None = None, dry_run: bool = False) -> UpdateResult:
    root = Path(project or ".").absolute()
    unfinished = _put_back_interrupted(root, dry_run)
    record = read_record(root)
    answers, old_version = record["answers"], record["template_version"]
    template = check_template(template)
    new_version = template_version(template)
    if version_order(new_version) < version_order(old_version):
        raise UsageError(
            f"{root} was made from template {old_version}, newer than template {new_version} here; an update never goes back.",
            hint=f"Install a newer bundler, or pass --template with a folder of template {old_version} or later.",
            value=new_version,
        )
    new_answers = {**default_answers(template), **answers, "bundler_version": __version__}
    validate_answers(new_answers, target=False)
    base_files, base_source = old_render(root, record)
    new_files = _rendered(new_answers, template)
    result = UpdateResult(root, old_version, new_version, "current", base_source, git_dirty=_git_dirty(root), put_back=unfinished)
    if new_version == old_version and new_files == base_files:
        if base_source == "re-rendered" and not dry_run:  # stored now, so that a later bundler can still merge against it
            result.backup_dir, result.stored = _write(result, record, answers, new_files), True
        return result
    _refuse_unresolved(root, record)
    theirs, untouchable = read_user_files(root, set(base_files) | set(new_files))
    sides = Sides(base_files, theirs, new_files, frozenset(untouchable), old_version, new_version)
    result.changes = plan(sides, lambda path: (root / path).exists() or path in new_files or path in base_files)
    result.status = "planned"
    if not dry_run:
        result.backup_dir = _write(result, record, new_answers, new_files)
        result.status = "updated"
    return result


def _write(result: UpdateResult, record: dict, new_answers: dict, new_files: dict[str, bytes]) -> str:
    """The plan, the new stored render and the answers file, all moved in or none; the backup folder."""
    archive = stored_base.pack(new_files)
    created = record.get("created") if isinstance(record.get("created"), str) else None
    document = answers_record(new_answers, result.new_version, stored_base.record(archive), created=created)
    document["conflicts"] = [change.path for change in result.conflicts]  # refused next time while still marked
    writes = _writes(result.changes) + [
        (stored_base.BASE_FILE, archive),
        (ANSWERS_FILE, (json.dumps(document, indent=2) + "\n").encode("utf-8")),
    ]
    backup_dir, _ = replace_with_backups(result.root, writes, "bundler update")
    return backup_dir


def _put_back_interrupted(root: Path, dry_run: bool) -> list[str]:
    """An update killed half way is undone before anything else (a dry run refuses instead: it writes nothing)."""
    if not root.is_dir():
        raise UsageError(f"{root} is not a folder.", hint="Name the project folder, or run bundler update inside it.", path=root)
    for name in (".bundler", BACKUP_DIR, ANSWERS_FILE, stored_base.BASE_FILE):
        if (root / name).is_symlink():
            raise ProjectFileError(
                f"{root / name} is a symbolic link; bundler update never reads or writes through one.",
                hint="Replace the link by the folder or file itself.",
                path=root / name,
            )
    unfinished = put_back_unfinished(root, apply=False)
    if unfinished and dry_run:
        raise ProjectFileError(
            f"an update of {root} was interrupted and left {unfinished[0]}: the project is half written.",
            hint="Run bundler update without --dry-run: it puts every file back first, then updates.",
            path=root / unfinished[0],
        )
    return put_back_unfinished(root)


def _refuse_unresolved(root: Path, record: dict) -> None:
    """The conflicts the last update marked must be resolved before another merge marks them again."""
    listed = record.get("conflicts")
    for relative in (str(path) for path in (listed if isinstance(listed, list) else [])):
        path = root / relative
        if Path(relative).is_absolute() or ".." in Path(relative).parts:
            continue  # a record never lists a path outside the project; nothing outside is read
        if not path.is_symlink() and path.is_file() and re.search(rb"^<<<<<<< template ", path.read_bytes(), re.M):
            raise ProjectFileError(
                f"{path} still holds the conflict markers the last bundler update wrote.",
                hint="Resolve each block between <<<<<<< template and >>>>>>> yours and remove the markers, then run bundler update.",
                path=path,
            )


def read_record(root: Path) -> dict:
    """.bundler-answers.json, checked: the template version and the answers it was rendered with."""
    path = root / ANSWERS_FILE
    if not path.is_file():
        what = "it has a bundle.toml (a project adopted by `bundler init`, or made by hand)" if (root / "bundle.toml").is_file() else ""
        raise ProjectFileError(
            f"{root} has no {ANSWERS_FILE}, so it was not made by `bundler new`"
            + (f": {what}" if what else "")
            + " and there is no template render to update from.",
            hint=NOT_MADE_HINT,
            path=path,
        )
    record = read_json(path, hint=NOT_MADE_HINT)
    if not isinstance(record, dict) or not isinstance(record.get("template_version"), str) or not record["template_version"]:
        raise ProjectFileError(f"{path} records no template_version.", hint=NOT_MADE_HINT, path=path, value="template_version")
    answers = record.get("answers")
    if not isinstance(answers, dict) or not answers:
        raise ProjectFileError(f"{path} records no answers.", hint=NOT_MADE_HINT, path=path, value="answers")
    wrong = next((key for key, value in answers.items() if not isinstance(value, str)), None)
    if wrong is not None:
        raise ProjectFileError(
            f"{path}: the answer {wrong!r} is {type(answers[wrong]).__name__}, not text.",
            hint=stored_base.HINT,
            path=path,
            value=wrong,
        )
    return record


def check_template(template: Path | None) -> Path | None:
    if template is None:
        return None
    template = Path(template).absolute()
    if not (template / "cookiecutter.json").is_file():
        raise UsageError(
            f"--template {template} is not a template folder: it has no cookiecutter.json.",
            hint="Name a copy of bundler's template/ folder (cookiecutter.json and {{cookiecutter.project_slug}}/).",
            path=template,
            value=str(template),
        )
    return template


def old_render(root: Path, record: dict) -> tuple[dict[str, bytes], str]:
    """The files as the template rendered them for this project: stored, or re-rendered where this bundler ships that version."""
    stored = record.get("base")
    if isinstance(stored, dict) and (root / stored_base.BASE_FILE).is_file():
        return stored_base.load(root, stored), "stored"
    version, shipped = record["template_version"], template_version()
    if version != shipped:
        raise ProjectFileError(
            f"{root / stored_base.BASE_FILE} is missing and template {version}, which the project was made from, is not the one "
            f"this bundler ships ({shipped}): the render the project started from cannot be reproduced.",
            hint="Restore .bundler/template-base.tar.gz from version control; or run bundler update once with the bundler release "
            f"that ships template {version} (it re-renders that version), then with this one.",
            path=root / stored_base.BASE_FILE,
            value=version,
        )
    answers = {**default_answers(), **record["answers"]}
    validate_answers(answers, target=False)
    return _rendered(answers, None), "re-rendered"


def read_user_files(root: Path, paths: set[str]) -> tuple[dict[str, bytes], set[str]]:
    """The project's version of each path (missing ones left out); a link or folder on the way is never followed."""
    files: dict[str, bytes] = {}
    untouchable = set()
    for relative in paths:
        target = root / relative
        parents = [root.joinpath(*Path(relative).parts[:end]) for end in range(1, len(Path(relative).parts))]
        if any(p.is_symlink() or (p.exists() and not p.is_dir()) for p in parents) or target.is_symlink():
            untouchable.add(relative)
        elif target.is_file():
            files[relative] = target.read_bytes()
        elif target.exists():
            untouchable.add(relative)
    return files, untouchable


def _rendered(answers: dict, template: Path | None) -> dict[str, bytes]:
    """The render's files; bundler's own (the answers file, .bundler/) are never a template's to write."""
    with tempfile.TemporaryDirectory(prefix="bundler-update-") as folder:
        render(Path(folder), answers, template)
        files = stored_base.read_tree(Path(folder))
    return {path: data for path, data in files.items() if path != ANSWERS_FILE and not path.startswith(".bundler/")}


def _writes(changes: list[Change]) -> list[tuple[str, bytes | None]]:
    writes: list[tuple[str, bytes | None]] = []
    for change in changes:
        if change.kind in WRITES and change.data is not None:
            writes.append((change.written or change.path, change.data))
        if change.removes:
            writes.append((change.removes, None))
    return writes


def _git_dirty(root: Path) -> bool | None:
    if not (root / ".git").exists():
        return None
    try:
        completed = subprocess.run(["git", "status", "--porcelain"], cwd=root, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if completed.returncode != 0:
        return None
    return bool(completed.stdout.strip())
