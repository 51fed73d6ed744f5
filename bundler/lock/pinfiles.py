"""Exact pins checked against the files their release publishes, before anything is resolved.

An ``==`` pin of requirements.in (or an include) names one release, and the index lists that
release's files: when none of its wheels fits the Target (CPython X.Y, Linux, its
architecture) and it publishes no source archive, nothing of it can be installed, whatever
the resolver does. Every such pin is refused at once, in one paragraph, each with the first
release that has a wheel for the Target when the index lists one. A pin whose every file
declares a Requires-Python that excludes the Target's CPython is refused the same way (pip
and uv never install it there), with the first release that admits it. A pin whose wheels stop
at older CPythons and that has only a source archive for the Target is named with them as
likely to fail (made for an older Python: its build is older than the Target's compilers
and build tools), or, when nothing is refused, kept as a note.

One index page per name (PyPI first; the lock's other indexes only for a pin PyPI does not
serve for the Target). A pin found fitting is remembered (a release's files are not
replaced), so a re-lock asks the indexes only about new pins.
"""

from __future__ import annotations

import contextlib
import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from bundler.errors import BundlerError, ExternalError, LockError
from bundler.fsutil import atomic_write_text
from bundler.lock.hashes import IndexFile, version_matches
from bundler.lock.requirements import read_lines
from bundler.lock.sources import (
    PYPI_SIMPLE,
    admits_python,
    first_admitting_release,
    first_fitting_release,
    index_files,
    is_sdist,
    python_ceiling,
    target_tags,
    wheel_fits,
)
from bundler.lock.spec import LockSpec
from bundler.pipsettings import cache_dir

WORKERS = 8


@dataclass(frozen=True)
class ExactPin:
    name: str
    version: str
    where: str  # requirements.in:5, or the file's name when the line is not found


@dataclass(frozen=True)
class Finding:
    pin: ExactPin
    installable: bool  # False: no fitting wheel and no source archive
    text: str  # what the refusal or the note says of it


def check_exact_pins(spec: LockSpec, say=lambda text: None) -> list[str]:
    """Refuse (LockError) every exact pin that nothing of installs on the Target; the notes for pins likely to fail."""
    pins = exact_pins(spec)
    fits = _known_fits()
    key = f"{spec.target.python} {spec.target.platform}"
    unknown = [pin for pin in pins if f"{pin.name}=={pin.version} {key}" not in fits]
    indexes = [PYPI_SIMPLE] + [url for url in [spec.index_url, *spec.extra_index_urls] if url.rstrip("/") != PYPI_SIMPLE]
    findings = []
    with ThreadPoolExecutor(WORKERS) as pool:
        for pin, finding in zip(unknown, pool.map(lambda pin: _finding(pin, indexes, spec.target), unknown), strict=True):
            if finding is None:
                fits.add(f"{pin.name}=={pin.version} {key}")
            elif finding.text:
                findings.append(finding)
    _remember(fits)
    refused = [finding for finding in findings if not finding.installable]
    likely = [finding for finding in findings if finding.installable]
    if refused:
        raise _refusal(spec, refused, likely)
    for finding in likely:
        say(f"Note: {finding.text}.")
    return [finding.text for finding in likely]


def with_pins_refused(error: LockError, spec: LockSpec) -> LockError:
    """The refusal of the direct references, with what the exact pins of the other lines say (``spec`` leaves the
    references out): one paragraph names every line to mend before a lock can be made."""
    try:
        notes = check_exact_pins(spec)
    except LockError as pins:
        error.message = error.message.rstrip(".") + ". Besides, " + pins.message[0].lower() + pins.message[1:]
        error.hint = f"{error.hint} For the pins: {pins.hint}"
        return error
    if notes:
        error.message = error.message.rstrip(".") + ". Noted: " + "; ".join(notes) + "."
    return error


def exact_pins(spec: LockSpec) -> list[ExactPin]:
    """The ``name==version`` lines of the resolver's input that are the project's own (not the Target's torch, companions
    or project wheels), with the line each comes from."""
    root = spec.bundle.root
    try:
        where = {line.text: line.where(Path(root).resolve()) for line in read_lines(root, spec.bundle.requirements)}
    except BundlerError:
        where = {}
    skip = set(spec.pins) | {wheel.name for wheel in spec.requirements.project_wheels}
    pins = []
    for text in spec.compiled_input:
        if text.startswith("-"):
            continue
        try:
            requirement = Requirement(text)
        except InvalidRequirement:
            continue
        exact = [s.version for s in requirement.specifier if s.operator == "==" and "*" not in s.version]
        name = canonicalize_name(requirement.name)
        if exact and name not in skip:
            pins.append(ExactPin(name, exact[0], where.get(text, spec.bundle.requirements)))
    return pins


def _finding(pin: ExactPin, indexes: list[str], target) -> Finding | None:
    """None when a wheel of the pin fits the Target; else what to say of it ("" when there is nothing to say)."""
    tags = target_tags(target)
    listing: list[IndexFile] = []
    for index in indexes:
        listing += _listing(index, pin.name)
        files = [f for f in listing if version_matches(f.filename, pin.name, pin.version)]
        if any(f.filename.endswith(".whl") and wheel_fits(f.filename, tags) for f in files):
            return None
    if not files:
        return Finding(pin, True, "")  # no such release listed (or no index answered): the resolver says so in its words
    if not any(admits_python(f, target.python) for f in files):
        return _excluded_python(pin, files, listing, target)
    wheels = sorted({f.filename for f in files if f.filename.endswith(".whl")})
    sdists = sorted({f.filename for f in files if is_sdist(f.filename)})
    ceiling = python_ceiling(wheels)
    older = ceiling is not None and ceiling < tuple(int(part) for part in target.python.split(".")[:2])
    first = first_fitting_release(listing, pin.version, tags)
    then = f"; the first release with a wheel for the Target: {pin.name}=={first}" if first else f"; no later release of {pin.name} has one"
    if not sdists:
        made = f"CPython ≤ {ceiling[0]}.{ceiling[1]}" if older and ceiling else "other Pythons or platforms than the Target's"
        kind = f"publishes wheels only for {made}" if wheels else "publishes no wheel"
        return Finding(pin, False, f"{pin.where}: {pin.name}=={pin.version} {kind} and no source archive{then}")
    if not older or ceiling is None:
        return Finding(pin, True, "")  # built from its source archive for a Python it was made for: the sidecar says so
    return Finding(
        pin,
        True,
        f"{pin.where}: {pin.name}=={pin.version} was made for Python ≤ {ceiling[0]}.{ceiling[1]} (its wheels stop at CPython "
        f"{ceiling[0]}.{ceiling[1]}), so CPython {target.python} gets its source archive ({sdists[0]}), likely to fail to build{then}",
    )


def _excluded_python(pin: ExactPin, files: list[IndexFile], listing: list[IndexFile], target) -> Finding:
    """The pin's every file says in its Requires-Python that the Target's CPython may not install it."""
    said = sorted({f.requires_python for f in files if f.requires_python})
    admitting = [f for f in listing if admits_python(f, target.python)]
    first = first_fitting_release(admitting, pin.version, target_tags(target)) or first_admitting_release(
        admitting, pin.version, target.python
    )
    then = f"; the first release that admits it: {pin.name}=={first}" if first else f"; no later release of {pin.name} admits it"
    return Finding(
        pin,
        False,
        f"{pin.where}: {pin.name}=={pin.version} declares Requires-Python {' / '.join(said)}, which excludes CPython {target.python}{then}",
    )


def _listing(index: str, name: str) -> list[IndexFile]:
    try:
        return index_files(index, name)
    except (ExternalError, OSError, ValueError):
        return []


def _refusal(spec: LockSpec, refused: list[Finding], likely: list[Finding]) -> LockError:
    count = f"{len(refused)} exact pin{'s' if len(refused) > 1 else ''}"
    message = (
        f"{count} of {spec.bundle.requirements} cannot be installed for {spec.target.describe()}, whatever else is resolved "
        "(read from the index before resolving): " + "; ".join(finding.text for finding in refused) + "."
    )
    if likely:
        message += " Besides, made for older Pythons: " + "; ".join(finding.text for finding in likely) + "."
    if spec.requirements.overrides:  # torch==1.7.1 next to pins of its time: the project was made for another torch
        message += " Noted before resolving: " + "; ".join(note.rstrip(".") for note in spec.requirements.overrides) + "."
    return LockError(
        message,
        hint=f"Pin the release named for each (or a later one) in {spec.bundle.requirements}, or remove the pin, then `bundler lock`: "
        "no resolver installs a release that publishes no file for the Target, or whose files exclude its Python. "
        "The previous lock was not touched.",
        path=spec.bundle.root / spec.bundle.requirements,
    )


def _fits_file() -> Path:
    return cache_dir() / "pin-fits.json"


def _known_fits() -> set[str]:
    try:
        data = json.loads(_fits_file().read_text(encoding="utf-8"))
        return {str(item) for item in data} if isinstance(data, list) else set()
    except (OSError, ValueError):
        return set()


def _remember(fits: set[str]) -> None:
    with contextlib.suppress(OSError):  # a cache: a failed write only costs the next lock a look-up
        atomic_write_text(_fits_file(), json.dumps(sorted(fits)))
