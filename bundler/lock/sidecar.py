"""The file beside the lock (``requirements-rebuild.json`` next to ``requirements-rebuild.txt``):
what a lock knows that pip's format cannot hold.

- ``direct``: the Target's direct dependencies (requirements.in and its includes, markers
  evaluated): the packages whose modules the image's smoke test and the diagnostics import;
- ``source_builds``: pins with no wheel for the Target, each with its source archive's
  name and sha256 (one of the lock's hashes) and why it must be built; ``bundler build``
  builds the wheel per Target and base image (the wheel cache records it; the build never
  writes this file) and the image installs it with ``--require-hashes`` like every other
  wheel;
- ``project_wheels``: wheels inside the project that requirements.in names, by sha256;
- ``pins``: each pin's version and hashes as the lock was written, so that a lock edited by
  hand is answered with the requirement that changed (``pin_changes``), not only "edited".

It is tied to the lock by the lock's body hash; ``bundler check`` and ``bundler build``
refuse one that does not match its lock.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from bundler.errors import LockError
from bundler.fsutil import atomic_write_text
from bundler.lock.lockfile import Lock

FORMAT = 1


def sidecar_path(lock_path: Path) -> Path:
    return Path(lock_path).with_suffix(".json")


@dataclass
class Sidecar:
    lock_body_sha256: str
    direct: list[str] = field(default_factory=list)
    source_builds: list[dict] = field(default_factory=list)
    project_wheels: list[dict] = field(default_factory=list)
    pins: dict[str, dict] = field(default_factory=dict)  # name -> {"version", "hashes"}; {} in a sidecar written before

    def as_dict(self) -> dict:
        return {
            "format": FORMAT,
            "written_by": "bundler lock (wheels: bundler build); do not edit",
            "lock_body_sha256": self.lock_body_sha256,
            "direct": self.direct,
            "source_builds": self.source_builds,
            "project_wheels": self.project_wheels,
            "pins": self.pins,
        }

    def built(self, name: str, key: str) -> dict | None:
        entry = next((item for item in self.source_builds if item["name"] == name), None)
        return (entry or {}).get("wheels", {}).get(key)


def read_sidecar(lock_path: Path) -> Sidecar | None:
    """The sidecar of ``lock_path``; None when there is none; LockError when it is not one."""
    path = sidecar_path(lock_path)
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("format") != FORMAT:
            raise ValueError(f"format {data.get('format')!r}, expected {FORMAT}")
        side = Sidecar(str(data["lock_body_sha256"]), list(data["direct"]), list(data["source_builds"]), list(data["project_wheels"]))
        for item in side.source_builds:
            _ = (item["name"], item["version"], item["sdist"], item["sdist_sha256"], item.get("wheels", {}))
        side.pins = _recorded_pins(data.get("pins", {}))
    except (ValueError, KeyError, TypeError, AttributeError, UnicodeDecodeError) as error:
        raise LockError(
            f"{path} is not a lock sidecar bundler can read ({error}).",
            hint="Delete it and run `bundler lock`, which writes it again.",
            path=path,
        ) from None
    return side


def write_sidecar(lock_path: Path, side: Sidecar) -> Path:
    path = sidecar_path(lock_path)
    atomic_write_text(path, json.dumps(side.as_dict(), indent=2, sort_keys=True) + "\n")
    return path


def sidecar_problems(lock: Lock, side: Sidecar | None) -> list[str]:
    """What makes the sidecar disagree with its lock ([] when they agree)."""
    path = sidecar_path(lock.path)
    if side is None:
        return [f"{path.name} is missing: run `bundler lock` (it writes it beside the lock)"]
    problems = []
    if lock.header and side.lock_body_sha256 != lock.header.body_sha256:
        problems.append(f"{path.name} was written for another version of {lock.path.name}: run `bundler lock`")
    pins = {pin.name: pin for pin in lock.pins}
    for item in side.source_builds:
        pin = pins.get(item["name"])
        if pin is None or pin.version != item["version"] or item["sdist_sha256"] not in pin.hashes:
            problems.append(f"{path.name} names {item['name']}=={item['version']} ({item['sdist']}), which the lock does not pin so")
    for item in side.project_wheels:
        pin = pins.get(item.get("name", ""))
        if pin is None or item.get("sha256") not in pin.hashes:
            problems.append(f"{path.name}: the project wheel {item.get('path')} is not locked by its hash")
    return problems


def _recorded_pins(document: object) -> dict[str, dict]:
    if not isinstance(document, dict):
        raise ValueError("pins is not an object")
    pins = {}
    for name, entry in document.items():
        if not isinstance(entry, dict) or not isinstance(entry.get("version"), str) or not isinstance(entry.get("hashes"), list):
            raise ValueError(f"pins[{name!r}] is not a version and a list of hashes")
        pins[str(name)] = {"version": entry["version"], "hashes": [str(digest) for digest in entry["hashes"]]}
    return pins


def recorded_pins(lock: Lock) -> dict[str, dict]:
    return {pin.name: {"version": pin.version, "hashes": sorted(pin.hashes)} for pin in lock.pins}


def pin_changes(lock: Lock) -> list[str]:
    """Each requirement of ``lock`` that differs from what `bundler lock` wrote (its sidecar's record); [] when unknown."""
    try:
        side = read_sidecar(lock.path)
    except LockError:
        return []
    if side is None or not side.pins or not lock.pins:
        return []
    now = recorded_pins(lock)
    changes = []
    for name in sorted(set(side.pins) | set(now)):
        was, found = side.pins.get(name), now.get(name)
        if was is None and found is not None:
            changes.append(f"{name}=={found['version']} was added")
        elif found is None and was is not None:
            changes.append(f"{name}=={was['version']} was removed")
        elif was is not None and found is not None and was["version"] != found["version"]:
            changes.append(f"{name} was pinned =={was['version']}, now =={found['version']}")
        elif was is not None and found is not None and sorted(was["hashes"]) != found["hashes"]:
            foreign = sorted(set(found["hashes"]) - set(was["hashes"]))
            what = f"sha256:{foreign[0][:16]}… is not one it was locked with" if foreign else "hashes were removed"
            changes.append(f"{name}=={found['version']}: {what}")
    return changes


def lock_sidecar_problems(lock: Lock) -> list[str]:
    """`bundler check`'s view: the sidecar is readable and agrees with the lock."""
    try:
        return sidecar_problems(lock, read_sidecar(lock.path))
    except LockError as error:
        return [error.message]


def make_sidecar(spec, lock: Lock, notes: list[str]) -> Sidecar:
    """The sidecar for a lock just read: direct names from the spec, source builds from the indexes
    (wheels already built for an unchanged source archive are kept)."""
    from bundler.lock.sources import source_builds

    try:
        previous = read_sidecar(lock.path)
    except LockError:
        previous = None
    kept = {(item["name"], item["sdist_sha256"]): item.get("wheels", {}) for item in previous.source_builds} if previous else {}
    builds = with_torch_reasons(source_builds(lock.pins, lock.indexes, spec.target, set(spec.pins), notes), spec.target)
    for build in builds:
        notes.append(f"{build.pin} will be built from its source archive by `bundler build`: {build.why}.")
    return Sidecar(
        lock_body_sha256=lock.header.body_sha256 if lock.header else "",
        direct=list(spec.requirements.direct),
        source_builds=[
            build.as_dict() | {"wheels": kept.get((build.name, build.sdist_sha256), {})} | _torch_flag(build) for build in builds
        ],
        project_wheels=[
            {"name": wheel.name, "version": wheel.version, "path": wheel.relative, "sha256": wheel.sha256()}
            for wheel in spec.requirements.project_wheels
        ],
        pins=recorded_pins(lock),
    )


def with_torch_reasons(builds: list, target) -> list:
    """Source builds whose archive a resolution found to import torch in its build say so (and where wheels per torch build live)."""
    from dataclasses import replace

    from bundler.lock.torchbuild import REASON, known_torch_builds, per_torch_index

    known = known_torch_builds()
    changed = []
    for build in builds:
        if build.sdist_sha256 in known:
            page = per_torch_index(build.name, target)
            why = REASON + (f"; {build.name} publishes wheels for each torch build on {page}" if page else "")
            build = replace(build, why=why)
        changed.append(build)
    return changed


def _torch_flag(build) -> dict:
    from bundler.lock.torchbuild import REASON

    return {"build_imports_torch": True} if build.why.startswith(REASON) else {}
