"""What each file of a project becomes in `bundler update`: three versions, one decision.

The stored render is the base, the user's file is theirs, the new render is ours. A file
only one side changed takes that side; a text file both changed is merged by
``git merge-file`` (conflicts stay in the file as standard markers, never ``.rej`` files);
a binary file is never merged. A file the user deleted stays deleted; a file the template
dropped goes only if the user never changed it; a file the template moved (same or
similar content under a new name) takes the user's edits with it.
"""

from __future__ import annotations

import difflib
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from bundler.errors import ExternalError

MOVE_SIMILARITY = 0.5  # git's default rename threshold
MERGE_TIMEOUT_S = 60
# Kinds that write the file at `path` (a move also removes its source).
WRITES = ("updated", "added", "merged", "conflict", "moved", "beside")


@dataclass
class Change:
    path: str
    kind: str  # updated|added|merged|conflict|moved|beside|removed|deleted|kept|yours|skipped
    detail: str
    data: bytes | None = None  # what is written at `path` (for `beside`: at `written`)
    removes: str | None = None  # a path removed: a dropped file, a moved file's old place
    written: str | None = None  # where `beside` writes the template's new file
    conflicts: int = 0

    def as_dict(self) -> dict:
        return {key: value for key, value in asdict(self).items() if key != "data"}


@dataclass(frozen=True)
class Sides:
    """The three versions of every file, and the names the conflict markers carry."""

    base: dict[str, bytes]
    theirs: dict[str, bytes]
    ours: dict[str, bytes]
    untouchable: frozenset[str]  # a link or a folder where a render has a file: never written
    old_version: str
    new_version: str


def plan(sides: Sides, taken: Callable[[str], bool]) -> list[Change]:
    """One Change per file that is not simply the same on every side, in path order."""
    moves = {
        old: new
        for old, new in pair_moves(sides.base, sides.ours).items()
        if new not in sides.theirs and not {old, new} & sides.untouchable
    }
    changes = []
    for path in sorted(set(sides.base) | set(sides.ours)):
        if path in moves.values():
            continue
        if path in sides.untouchable:
            changes.append(Change(path, "skipped", "a symbolic link or a folder where the template has a file: not touched"))
        elif path in moves:
            changes.append(_moved(sides, path, moves[path], taken))
        else:
            change = _decide(sides, path, taken)
            if change is not None:
                changes.append(change)
    return changes


def _decide(sides: Sides, path: str, taken: Callable[[str], bool]) -> Change | None:
    base, theirs, ours = sides.base.get(path), sides.theirs.get(path), sides.ours.get(path)
    if theirs == ours:
        return None  # both sides agree, whatever the base was
    if ours is None:
        if theirs is None or base is None:
            return None
        if theirs == base:
            return Change(path, "removed", "the template dropped it and you never changed it", removes=path)
        return Change(path, "kept", "the template dropped it; you changed it, so it stays")
    if base is not None and theirs is None:
        changed = " (the template changed it)" if ours != base else ""
        return Change(path, "deleted", f"you deleted it; it stays deleted{changed}")
    if theirs is None:
        return Change(path, "added", "new in the template", data=ours)
    if theirs == base:
        return Change(path, "updated", "the template changed it, you did not", data=ours)
    if ours == base:
        return Change(path, "yours", "you changed it, the template did not: kept")
    return _both(sides, path, base or b"", theirs, ours, taken)


def _both(sides: Sides, path: str, base: bytes, theirs: bytes, ours: bytes, taken: Callable[[str], bool]) -> Change:
    """Both sides changed ``path`` (or both added it): a merge, or for binary files the new one beside."""
    if any(is_binary(data) for data in (base, theirs, ours)):
        beside = _beside_name(path, sides.new_version, taken)
        return Change(
            path, "beside", f"binary, changed on both sides: yours kept, the template's new one is {beside}", data=ours, written=beside
        )
    merged, conflicts = merge_text(base, theirs, ours, sides.old_version, sides.new_version)
    if conflicts:
        return Change(path, "conflict", f"{conflicts} conflict(s) marked in the file", data=merged, conflicts=conflicts)
    return Change(path, "merged", "your changes and the template's merged", data=merged)


def _moved(sides: Sides, old: str, new: str, taken: Callable[[str], bool]) -> Change:
    base, theirs, ours = sides.base[old], sides.theirs.get(old), sides.ours[new]
    if theirs is None:
        return Change(old, "deleted", f"you deleted it; the template moved it to {new}, which stays away too")
    if theirs == base:
        return Change(new, "moved", f"the template moved {old} here", data=ours, removes=old)
    if any(is_binary(data) for data in (base, theirs, ours)):
        return Change(new, "added", f"the template moved {old} here; your changed {old} is kept where it is", data=ours)
    merged, conflicts = merge_text(base, theirs, ours, sides.old_version, sides.new_version)
    if conflicts:
        detail = f"the template moved {old} here; your changes came along with {conflicts} conflict(s) marked"
        return Change(new, "conflict", detail, data=merged, removes=old, conflicts=conflicts)
    return Change(new, "moved", f"the template moved {old} here; your changes came along", data=merged, removes=old)


def pair_moves(base: dict[str, bytes], ours: dict[str, bytes]) -> dict[str, str]:
    """Files the template dropped matched to files it added, by content (most similar first, one to one)."""
    dropped = [path for path in base if path not in ours]
    added = [path for path in ours if path not in base]
    scored = sorted(((similarity(base[old], ours[new]), old, new) for old in dropped for new in added), reverse=True)
    moves: dict[str, str] = {}
    for score, old, new in scored:
        if score < MOVE_SIMILARITY:
            break
        if old not in moves and new not in moves.values():
            moves[old] = new
    return moves


def similarity(a: bytes, b: bytes) -> float:
    if a == b:
        return 1.0
    if is_binary(a) or is_binary(b):
        return 0.0
    matcher = difflib.SequenceMatcher(None, a.splitlines(), b.splitlines(), autojunk=False)
    if matcher.real_quick_ratio() < MOVE_SIMILARITY or matcher.quick_ratio() < MOVE_SIMILARITY:
        return 0.0
    return matcher.ratio()


def is_binary(data: bytes) -> bool:
    """git's rule: a NUL byte in the first 8000 bytes."""
    return b"\0" in data[:8000]


def merge_text(base: bytes, theirs: bytes, ours: bytes, old_version: str, new_version: str) -> tuple[bytes, int]:
    """``git merge-file`` of the three versions: the merged bytes and the number of conflicts marked in them.

    The markers read ``<<<<<<< template NEW`` (the new render), ``=======``, ``>>>>>>> yours``.
    """
    git = shutil.which("git")
    if git is None:
        raise ExternalError(
            "git is not on PATH: bundler update merges files that both you and the template changed with `git merge-file`.",
            hint="Install git (apt-get install git, brew install git), then run bundler update again.",
        )
    with tempfile.TemporaryDirectory(prefix="bundler-merge-") as folder:
        names = []
        for name, data in (("ours", ours), ("base", base), ("theirs", theirs)):
            (Path(folder) / name).write_bytes(data)
            names.append(str(Path(folder) / name))
        labels = ["-L", f"template {new_version}", "-L", f"template {old_version}", "-L", "yours"]
        command = [git, "-c", "merge.conflictStyle=merge", "merge-file", "-p", *labels, *names]
        try:
            completed = subprocess.run(command, capture_output=True, timeout=MERGE_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise ExternalError(f"git merge-file ran over {MERGE_TIMEOUT_S} s.", hint="Run bundler update again.") from None
    if not 0 <= completed.returncode <= 127:
        reason = completed.stderr.decode("utf-8", "replace").strip() or f"exit {completed.returncode}"
        raise ExternalError(f"git merge-file failed: {reason}.", hint="Check that `git merge-file` runs here (git 2.x).")
    return completed.stdout, completed.returncode


def _beside_name(path: str, version: str, taken: Callable[[str], bool]) -> str:
    name, number = f"{path}.template-{version}", 1
    while taken(name):
        number += 1
        name = f"{path}.template-{version}-{number}"
    return name
