"""The files `bundler init` adds, composed as text first, then moved in all together.

Nothing that exists is overwritten or changed, with one exception that loses nothing:
an existing ``.dockerignore`` gets the secret and run-output lines it lacks appended in
a marked block (those files never enter an image anyway; the block makes that visible
to `bundler check` and to anyone reading the file). Every new file is written into a
staging folder inside the project, then moved into place with a no-clobber link; if
anything fails, whatever was moved is taken back out and the project is as it was.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from bundler.errors import ExistsError
from bundler.fsutil import atomic_write_text, remove_tree

BLOCK_START = "# >>> bundler init: lines added (secrets and run outputs never enter the image) >>>"
BLOCK_END = "# <<< bundler init <<<"


@dataclass
class Planned:
    files: dict[str, str] = field(default_factory=dict)  # new file (relative) -> text
    folders: dict[str, Path] = field(default_factory=dict)  # new folder (relative) -> the folder copied into it
    appends: dict[str, str] = field(default_factory=dict)  # existing file -> block appended
    untouched: list[str] = field(default_factory=list)  # existing files named and left as they are, and why

    def paths(self) -> list[str]:
        return sorted([*self.files, *(f"{name}/" for name in self.folders)])


def write(root: Path, planned: Planned) -> None:
    """Every new file and folder moved in together, then the appends; nothing existing replaced."""
    clashes = [name for name in [*planned.files, *planned.folders] if os.path.lexists(root / name)]
    if clashes:
        raise ExistsError(
            f"{root / clashes[0]} appeared while bundler init was writing; nothing was changed.",
            hint="Run bundler init again.",
            path=root / clashes[0],
        )
    staging = Path(tempfile.mkdtemp(prefix=".bundler-init.", suffix=".partial", dir=root))
    moved: list[Path] = []
    try:
        for name, text in planned.files.items():
            path = staging / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        for name, source in planned.folders.items():
            shutil.copytree(source, staging / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        for top in sorted({Path(name).parts[0] for name in [*planned.files, *planned.folders]}):
            _move_in(staging / top, root / top, moved)
        for name, block in planned.appends.items():
            path = root / name
            text = path.read_text(encoding="utf-8")
            atomic_write_text(path, text + ("" if text.endswith("\n") or not text else "\n") + block)
    except BaseException:
        for path in reversed(moved):
            remove_tree(path) if path.is_dir() and not path.is_symlink() else path.unlink(missing_ok=True)
        raise
    finally:
        remove_tree(staging)


def _move_in(source: Path, dest: Path, moved: list[Path]) -> None:
    """``source`` into ``dest``: a new file by a hard link (which never replaces), a new folder whole,
    an existing folder (one the project already has, like ``runs/``) file by file."""
    if source.is_dir():
        if not dest.exists():
            os.mkdir(dest)
            moved.append(dest)
            for child in sorted(source.iterdir()):
                _move_in(child, dest / child.name, [])
            return
        for child in sorted(source.iterdir()):
            _move_in(child, dest / child.name, moved)
        return
    try:
        os.link(source, dest)
    except FileExistsError:
        raise ExistsError(
            f"{dest} appeared while bundler init was writing; what it had moved in was taken out again.",
            hint="Run bundler init again.",
            path=dest,
        ) from None
    moved.append(dest)


def block(lines: list[str]) -> str:
    return "\n".join([BLOCK_START, *lines, BLOCK_END]) + "\n"
