"""What bundler keeps between builds, with sizes, and how much of it can go (`bundler cache`).

- the wheel cache: ``<cache>/…/sha256/<hh>/<sha256>/<file>`` (locked wheels, source
  archives, wheels built from them) and the records of built wheels (``builds/``);
- bundler's images: dependency images (``bundler/deps:<key>``, label ``io.bundler.deps.key``,
  without a project's labels), builder images (``bundler/builder:<key>``, label
  ``io.bundler.builder.key``), and leftovers: untagged images carrying one of those labels
  that nothing is built on (an earlier build's result whose tag moved on, or the last step
  of a build that failed).

Pruning removes only what has exactly those shapes and labels, so it never touches a
file or an image bundler did not make. An image another image is built on (a project's
image stands on its dependency image) or a container uses is kept; nothing is forced.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from bundler.engine import Engine, EngineFailure, Image
from bundler.engine.builderimage import BUILDER_LABEL, BUILDER_REPOSITORY
from bundler.image import layout
from bundler.image.deps import DEPS_REPOSITORY
from bundler.image.labels import DEPS_LABEL, LABEL_PREFIX
from bundler.image.wheelhouse import cache_root
from bundler.pipsettings import cache_dir

PROJECT_LABEL = f"{LABEL_PREFIX}.target"  # on project images (which inherit the deps label from their parent)
_HEX64 = re.compile(r"^[0-9a-f]{64}$")
DAY = 86400.0


@dataclass
class CachedFile:
    path: Path
    bytes: int
    last_used: float


@dataclass
class CachedImage:
    id: str
    kind: str  # dependency | builder | leftover
    tags: list[str]
    bytes: int  # what removing it frees (not shared with another image)
    created: float  # 0.0 when the engine dated it by its inputs (Podman's builds: layout.FILE_TIME), not by the clock
    in_use: str = ""  # why it must stay ("" when it may go)

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass
class Listing:
    cache_dir: Path
    files: list[CachedFile] = field(default_factory=list)
    images: list[CachedImage] = field(default_factory=list)
    engine_note: str = ""

    def as_dict(self) -> dict:
        wheel_bytes = sum(item.bytes for item in self.files)
        image_bytes = sum(item.bytes for item in self.images)
        return {
            "cache_dir": str(self.cache_dir),
            "wheels": {"files": len(self.files), "bytes": wheel_bytes, "root": str(cache_root())},
            "images": [image.as_dict() for image in self.images],
            "images_bytes": image_bytes,
            "total_bytes": wheel_bytes + image_bytes,
            "engine": self.engine_note or "answered",
        }


def cached_files() -> list[CachedFile]:
    """Files of the content-addressed cache and the built-wheel records (nothing else)."""
    found = []
    root = cache_root()
    if root.is_dir():
        for path in root.glob("??/*/*"):
            if path.is_file() and _HEX64.match(path.parent.name) and path.parent.name.startswith(path.parent.parent.name):
                found.append(_file(path))
    builds = cache_dir() / "builds"
    if builds.is_dir():
        for path in builds.glob("??/*/*.json"):
            if path.is_file() and _HEX64.match(path.parent.name) and re.match(r"^[0-9a-f]{16}\.json$", path.name):
                found.append(_file(path))
    return found


def _file(path: Path) -> CachedFile:
    stat = path.stat()
    return CachedFile(path, stat.st_size, max(stat.st_atime, stat.st_mtime))


def bundler_images(engine: Engine) -> list[CachedImage]:
    """bundler's dependency and builder images, with what removing each frees and whether it must stay."""
    parents = {image.id: image.parent for image in engine.images(all=True)}
    images = engine.images()  # tagged images and untagged leaves; a build's step images hide behind them
    standing_on: dict[str, str] = {}
    for image in images:
        ancestor = parents.get(image.id, "")
        while ancestor:
            standing_on.setdefault(ancestor, (image.tags or (image.short_id,))[0])
            ancestor = parents.get(ancestor, "")
    used_by_containers = engine.container_images()
    unique = engine.unique_sizes()
    found = []
    for image in images:
        kind = _kind(image)
        if kind is None:
            continue
        reason = ""
        if image.id in used_by_containers:
            reason = "a container uses it"
        elif image.id in standing_on:
            reason = f"{standing_on[image.id]} is built on it"
        found.append(CachedImage(image.id, kind, list(image.tags), int(unique.get(image.id, 0)), _epoch(image.created), reason))
    return found


def _kind(image: Image) -> str | None:
    """dependency | builder | leftover (an untagged image of an earlier bundler build) | None (not bundler's)."""
    labels = image.labels
    tags = image.tags
    if not tags:
        return "leftover" if DEPS_LABEL in labels or BUILDER_LABEL in labels else None
    if BUILDER_LABEL in labels and all(tag.startswith(BUILDER_REPOSITORY + ":") for tag in tags):
        return "builder"
    if DEPS_LABEL in labels and PROJECT_LABEL not in labels and all(tag.startswith(DEPS_REPOSITORY + ":") for tag in tags):
        return "dependency"
    return None


def _epoch(created: str) -> float:
    import datetime

    try:
        epoch = datetime.datetime.fromisoformat(created[:26].rstrip("Z") + "+00:00").timestamp()
    except ValueError:
        return 0.0
    return 0.0 if epoch == layout.FILE_TIME else epoch


def listing(engine: Engine | None, *, why_none: str = "no Docker engine answers") -> Listing:
    result = Listing(cache_dir(), cached_files())
    if engine is None:
        result.engine_note = f"{why_none}: images not listed"
    else:
        result.images = bundler_images(engine)
    return result


@dataclass
class PruneResult:
    dry_run: bool
    files: list[str] = field(default_factory=list)
    file_bytes: int = 0
    images: list[dict] = field(default_factory=list)
    image_bytes: int = 0
    kept: list[dict] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {
            "dry_run": self.dry_run,
            "removed": {"files": len(self.files), "file_bytes": self.file_bytes, "images": self.images, "image_bytes": self.image_bytes},
            "freed_bytes": self.file_bytes + self.image_bytes,
            "kept": self.kept,
            "notes": self.notes,
        }


def prune(
    engine: Engine | None,
    *,
    images: bool,
    wheels: bool,
    older_than_days: float,
    dry_run: bool,
    select: Callable[[CachedImage], bool] = lambda image: True,
    why_none: str = "no Docker engine answers",
) -> PruneResult:
    """Remove bundler's unused images and cache files not used for ``older_than_days``
    (``select`` narrows the images looked at, e.g. to one test's own)."""
    result = PruneResult(dry_run)
    cutoff = time.time() - older_than_days * DAY
    if wheels:
        for item in cached_files():
            if item.last_used > cutoff:
                continue
            if not dry_run:
                item.path.unlink(missing_ok=True)
                _remove_empty(item.path.parent)
            result.files.append(str(item.path))
            result.file_bytes += item.bytes
    if images and engine is None:
        result.notes.append(f"{why_none}: no image was looked at")
    elif images and engine is not None:
        _prune_images(engine, [image for image in bundler_images(engine) if select(image)], cutoff, dry_run, result)
    return result


def _prune_images(engine: Engine, candidates: list[CachedImage], cutoff: float, dry_run: bool, result: PruneResult) -> None:
    for image in candidates:
        undated = not image.created and cutoff < time.time()  # its age is unknown: only --older-than 0 takes it
        if image.in_use or image.created > cutoff or undated:
            why = image.in_use or ("its engine dated it by its inputs, not the clock" if undated else "newer than --older-than")
            result.kept.append({"id": image.id, "tags": image.tags, "why": why})
            continue
        if not dry_run:
            try:
                for reference in image.tags or [image.id]:  # the last tag removed takes the image (and its untagged steps)
                    engine.remove_image(reference)
            except EngineFailure as error:
                result.kept.append({"id": image.id, "tags": image.tags, "why": error.explanation[:200]})
                continue
        result.images.append({"id": image.id, "tags": image.tags, "kind": image.kind, "bytes": image.bytes})
        result.image_bytes += image.bytes


def _remove_empty(folder: Path) -> None:
    roots = (cache_root(), cache_dir() / "builds")
    while all(folder != root for root in roots) and any(root in folder.parents for root in roots):
        try:
            folder.rmdir()
        except OSError:
            return
        folder = folder.parent
