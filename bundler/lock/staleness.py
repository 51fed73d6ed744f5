"""Releases years older than the newest the Target could use, chosen by the resolver without a word.

When the resolver backtracks, it may settle a direct dependency on a release years old
(``open3d-python==0.3.0.0``, ``Pillow==6.2.1``) and the lock is written as if nothing happened;
the user finds out when that release fails to build or misbehaves on the rented machine. After
resolving, each direct dependency that requirements.in does not hold back itself is compared
with the newest final release whose files admit the Target's CPython, by the upload times the
index pages give (PEP 700; the pages the lock's hashes were read from): three years or more
between them is a note, naming both releases.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timezone

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from bundler.contracts.lockformat import Pin, unhashed_pin
from bundler.lock.hashes import IndexFile
from bundler.lock.sources import admits_python, file_version
from bundler.lock.spec import LockSpec
from bundler.lock.torchbuild import wanted_specifier

YEARS = 3


def stale_notes(body: str, spec: LockSpec, listing: Callable[[str], list[IndexFile]]) -> list[str]:
    """A note for each direct dependency locked on a release ``YEARS`` or more older than the newest one the Target
    could install and requirements.in admits; ``listing(name)`` gives a project's files as the indexes list them."""
    direct = set(spec.requirements.direct) - set(spec.pins)
    pins = [pin for pin in map(unhashed_pin, body.splitlines()) if pin is not None and pin.name in direct]
    notes = [_stale(pin, listing(pin.name), wanted_specifier(pin.name, spec.compiled_input), spec) for pin in pins]
    return [note for note in notes if note]


def _stale(pin: Pin, files: list[IndexFile], wanted: SpecifierSet, spec: LockSpec) -> str:
    released = release_times(files, spec.target.python)
    try:
        chosen_version = Version(pin.version)
    except InvalidVersion:
        return ""
    chosen = released.get(chosen_version)
    newer = [(v, t) for v, t in released.items() if not v.is_prerelease and v > chosen_version and wanted.contains(v)]
    if chosen is None or not newer:
        return ""
    newest, when = max(newer)
    if (when - chosen).days < YEARS * 365:
        return ""
    return (
        f"{pin.name}=={pin.version} (released {chosen.year}) was locked where {pin.name} {newest} ({when.year}) installs on "
        f"CPython {spec.target.python} and {spec.bundle.requirements} admits it: another requirement holds it back (the "
        f"lock's `# via` lines name who); pin {pin.name}>={newest} in {spec.bundle.requirements} to see which"
    )


def release_times(files: list[IndexFile], python: str) -> dict[Version, datetime]:
    """Each release's first upload time among its files that admit CPython ``python`` (files without a time left out)."""
    times: dict[Version, datetime] = {}
    for file in files:
        version = file_version(file.filename)
        if version is None or not file.upload_time or not admits_python(file, python):
            continue
        try:
            when = datetime.fromisoformat(file.upload_time.replace("Z", "+00:00"))
        except ValueError:
            continue
        when = when if when.tzinfo else when.replace(tzinfo=timezone.utc)
        times[version] = min(when, times.get(version, when))
    return times
