"""What pip and pip-compile said, turned into one error paragraph (never a traceback)."""

from __future__ import annotations

import re
from pathlib import Path

from packaging.utils import canonicalize_name

from bundler.contracts.dropped import pin_that_ships
from bundler.contracts.syslibs import bundle_line
from bundler.errors import ExternalError, LockError
from bundler.lock.pinfiles import exact_pins
from bundler.lock.spec import LockSpec
from bundler.lock.torchbuild import RETIRED_NOTICE, per_torch_index, torch_build_failure, unpreparable, without_frames
from bundler.lock.uvresolve import uv_summary
from bundler.target.syspackages import binding_for

_NOISE = re.compile(r"WARNING: Location '.*' is ignored|^\s*$")


_TRACEBACK = re.compile(
    r"^(Traceback|File |raise |During handling|The above exception|[~^]|[a-z_.]+\.[A-Za-z]+(Error|Impossible|Conflicted)\b)"
)


def _conflicting(log: str) -> list[tuple[str, str]]:
    """(requirement, its parent: 'scikit-learn 1.9.1', or "" for the input) of each cause of pip's ResolutionImpossible."""
    impossible = next((line for line in log.splitlines() if "ResolutionImpossible: [" in line), "")
    found = re.findall(r"requirement=\w+\('([^']+)'\), parent=(None|\w+\('([^']*)'\))", impossible)
    return [(spec, _parent(link) if link else "") for spec, _, link in found]


def _conflict_causes(log: str, input_name: str) -> str:
    """'numpy==1.26.4 (requirements.in) vs numpy==2.1.0 (requirements.in)' from pip's ResolutionImpossible."""
    found = _conflicting(log)
    if not found:
        return ""
    return "conflicting requirements: " + " vs ".join(f"{spec} ({parent or input_name})" for spec, parent in found[:4])


def _torch_pinned_by(spec: LockSpec, log: str) -> tuple[str, str, str] | None:
    """(package, release, torch) when a conflict's cause is a package's exact requirement on another torch than the Target's."""
    for requirement, parent in _conflicting(log):
        name, _, version = parent.partition(" ")
        wanted = re.fullmatch(r"torch\s*==\s*([\w.]+)", requirement)
        if wanted and version and wanted.group(1) != spec.target.torch:
            return name, version, wanted.group(1)
    return None


def _parent(link: str) -> str:
    """'scikit-learn 1.9.1' from "https://…/scikit_learn-1.9.1-cp311-….whl (from https://…) (requires-python:…)"."""
    filename = Path(link.split()[0].split("#")[0]).name
    name, _, rest = filename.partition("-")
    return f"{name.replace('_', '-')} {rest.split('-')[0].removesuffix('.tar.gz').removesuffix('.zip')}".strip()


def resolution_error(spec: LockSpec, log: str, where: str, indexes: list[tuple[str, str]], kept_pins: bool) -> Exception:
    """One paragraph for a failed resolution: an unreachable index, an index without the Target's
    torch, or the requirements that conflict (with --upgrade named when the old lock's pins took part)."""
    lines = [line.strip() for line in log.splitlines() if not _NOISE.search(line)]
    unreachable = [
        line
        for line in lines
        if re.search(
            r"Could not fetch URL|Failed to establish|NewConnectionError|Name or service not known|ConnectionError|SSLError|timed "
            r"out|ProxyError",
            line,
        )
    ]
    if unreachable:
        return ExternalError(
            f"resolution on {where} could not reach an index for {spec.target.describe()}: {unreachable[0][:300]}",
            hint="Check the network, the proxy (PIP_PROXY / HTTPS_PROXY) and the CA bundle (PIP_CERT); "
            "BUNDLER_INDEX_MAP can point an index at a reachable mirror. The previous lock was not touched.",
        )
    needs_torch = torch_build_failure(log)
    if needs_torch is not None:
        name, version = needs_torch
        return unpreparable(name, version, spec.target, "no release of it that the requirements allow could stand in for its build")
    unbuilt = prepare_failure(log) or metadata_failure(log)
    if unbuilt is not None:
        return unprepared(spec, *unbuilt) if unbuilt[0] else _unnamed(spec, unbuilt[2])
    lacking = _index_without_torch(spec, log, indexes)
    if lacking is not None:
        return lacking
    pinning = _torch_pinned_by(spec, log)
    if pinning is not None:
        return _made_for_torch(spec, log, *pinning)
    if spec.resolver == "uv":
        summary = uv_summary(log)
    else:
        errors = [line for line in lines if line.startswith("ERROR:")]
        causes = _conflict_causes(log, spec.bundle.requirements)
        summary = (errors[:1] + [causes]) if errors and causes else errors[:2]
        summary = summary or [line for line in lines if not _TRACEBACK.match(line)][-2:]
    requirements = spec.bundle.root / spec.bundle.requirements
    hint = f"Loosen or fix the pins in {requirements} named above. The previous lock was not touched."
    if kept_pins:
        hint = (
            f"The current lock's pins were kept as preferences: run `bundler lock --upgrade` to resolve {requirements} from scratch, "
            "or loosen the pins named above. The previous lock was not touched."
        )
    return LockError(
        f"the requirements cannot be resolved together for {spec.target.describe()}: "
        + "; ".join(s.removeprefix("ERROR: ")[:300] for s in summary),
        hint=hint,
        path=requirements,
    )


def _made_for_torch(spec: LockSpec, log: str, name: str, version: str, torch: str) -> LockError:
    """The conflict of a package made for one torch with the Target's: its release for the Target's torch, or the torch to lock for."""
    from bundler.lock.companions import pinned_torch
    from bundler.lock.pypimeta import torch_requirements
    from bundler.target.table_file import load_table

    requirements = spec.bundle.root / spec.bundle.requirements
    wanted = torch_requirements(name, version, spec.target)
    why, route = pinned_torch(name, version, torch, wanted, spec.target, load_table(), spec.bundle.requirements)
    return LockError(
        f"the requirements cannot be resolved together for {spec.target.describe()}: "
        f"{_conflict_causes(log, spec.bundle.requirements)}. {why}.",
        hint=route + " The previous lock was not touched.",
        path=requirements,
    )


# pip: "Failed to build 'skimage' when getting requirements to build wheel" / "... when preparing metadata"; uv: "Failed to build `x==1`"
_PREPARE = re.compile(
    r"Failed to build [`']([A-Za-z0-9][A-Za-z0-9._-]*)(?:==([^`'\s]+))?[`'](?: when (getting requirements|preparing metadata))?"
)
_OUTPUT = re.compile(r"\[\d+ lines? of output\]\n(.*?)\n\s*\[end of output\]", re.DOTALL)
_MISSING = re.compile(r"No module named '([\w.]+)'")


def prepare_failure(log: str) -> tuple[str, str, str] | None:
    """(name, version or "", its own output) of a source archive whose build backend failed while the resolver read its requirements."""
    found = _PREPARE.findall(log)
    if not found:
        return None
    name, version, _ = found[-1]
    if not version:  # pip names the archive it downloaded: mmcv-2.0.1.tar.gz
        archive = re.search(rf"\b{re.escape(name)}-(\d[\w.+!]*?)\.(?:tar\.gz|zip)\b", log, re.IGNORECASE)
        version = archive.group(1) if archive else ""
    blocks = _OUTPUT.findall(log)
    text = blocks[-1] if blocks else log
    return name, version, _own_output(text)


# pip-tools lets pip's MetadataGenerationFailed out as a traceback, with no "Failed to build" line; at -v the archive
# is the last one pip collected, downloaded or processed before its "Preparing metadata" step failed
METADATA_FAILED = re.compile(r"MetadataGenerationFailed|Preparing metadata \([^)]*\) did not run successfully")
_COLLECTED = re.compile(
    r"^\s*(?:Collecting ([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?(?:==([^\s;,]+))?"
    r"|(?:Downloading|Processing|Using cached) \S*?([A-Za-z0-9][A-Za-z0-9._]*)-(\d[\w.+!]*?)\.(?:tar\.gz|zip|tar\.bz2)\b)",
    re.MULTILINE,
)


def metadata_failure(log: str) -> tuple[str, str, str] | None:
    """(name or "", version or "", its own output) of a source archive whose metadata step failed with pip's traceback
    alone; the name is "" when the log does not say which archive it was (pip-compile without -v)."""
    found = METADATA_FAILED.search(log)
    if not found:
        return None
    name, version = "", ""
    for match in _COLLECTED.finditer(log[: found.start()]):
        collected, pinned, archive, archived = match.groups()
        if collected:
            name, version = collected, pinned or ""
        elif archive and canonicalize_name(archive) == canonicalize_name(name or archive):
            name, version = name or archive, archived
    blocks = _OUTPUT.findall(log)
    return str(canonicalize_name(name)) if name else "", version, _own_output(blocks[-1]) if blocks else ""


def _own_output(text: str, last: int = 8) -> str:
    """The last lines of an archive's output, after any earlier notice that it is retired and what replaces it."""
    lines = without_frames(text)
    notices = [line for line in lines[:-last] if RETIRED_NOTICE.search(line)][:4]
    return "\n  ".join(line[:300] for line in notices + lines[-last:])


def unprepared(spec: LockSpec, name: str, version: str, output: str) -> LockError:
    """The refusal for a source archive that does not even give its requirements here: its own words, and the routes."""
    if not version:  # the log names no release: requirements.in's own exact pin of it, when it has one
        version = next((pin.version for pin in exact_pins(spec) if pin.name == canonicalize_name(name)), "")
    pin = f"{name}=={version}" if version else name
    missing = _MISSING.findall(output)
    why = ""
    if missing:
        module = missing[-1]
        shipped = pin_that_ships(module)
        why = f" Its setup imports {module}, which its isolated build environment does not have" + (
            f" (only {shipped} still ships it): the release is older than the build tools pip installs for it."
            if shipped
            else ": a build requirement it does not declare."
        )
    page = per_torch_index(name, spec.target)
    wheels = f" {name} publishes wheels for each torch build on {page}." if page else ""
    from bundler.lock.sources import listed_wheel_route

    release = listed_wheel_route(name, version, spec.target)
    binding = binding_for(name)
    if binding is not None:  # GDAL: bindings that build only at the system library's own release
        package, system_release = binding
        release = (
            f"{name}'s bindings compile against the system's own library and build only at its release: in bundle.toml's "
            f"[build], {bundle_line([package])}, and pin `{name}=={system_release}` (the release of Debian bookworm's {package}) "
            f"in requirements.in; or {release[0].lower() + release[1:]}"
        )
    return LockError(
        f"{pin} cannot be resolved for {spec.target.describe()}: the release the resolver chose has no wheel the Target can "
        f"use, and its source archive's build failed while the resolver read its requirements. Its own output:\n  {output}\n{why}".rstrip(),
        hint=f"The pins are not at fault: this release of {name} does not build here. {release}; or build the wheel where it "
        f"builds (`pip wheel --no-deps {pin} -w wheels/`) and list `./wheels/<the file>.whl` in requirements.in." + wheels + " The "
        "previous lock was not touched.",
        value=name,
    )


def _unnamed(spec: LockSpec, output: str) -> LockError:
    """A metadata step that failed where pip's log does not say whose it was."""
    return LockError(
        f"a source archive's build failed while the resolver read its requirements for {spec.target.describe()}, and the "
        f"resolver's log does not name the archive. Its own output:\n  {output}",
        hint="The pins are not at fault: a release the resolver chose does not build here. Its own words above name the package; "
        "pin a release of it that publishes a wheel for the Target, or build the wheel where it builds (`pip wheel --no-deps NAME==VER "
        "-w wheels/`) and list `./wheels/<the file>.whl` in requirements.in. The previous lock was not touched.",
        path=spec.bundle.root / spec.bundle.requirements,
    )


def _index_without_torch(spec: LockSpec, log: str, indexes: list[tuple[str, str]]) -> Exception | None:
    """When pip found no build of torch or of a companion the Target pins, the index that should serve it
    (a BUNDLER_INDEX_MAP mirror, say), named."""
    said = r"(No matching distribution found for|Could not find a version that satisfies the requirement|there is no version of)"
    for name, version in spec.pins.items():
        pin = f"{name}=={version}"
        single = f"conflicting requirements: {pin} ({spec.bundle.requirements})"  # pip's ResolutionImpossible with that pin alone
        asked = re.search(rf"{said} {re.escape(pin)}(?![\w.+])", log) or f"{name} was not found in the package registry" in log
        if asked or (_conflict_causes(log, spec.bundle.requirements) == single):
            lacking = _index_without(name, version, indexes)
            if lacking is not None:
                return lacking
    return None


def _index_without(name: str, version: str, indexes: list[tuple[str, str]]) -> Exception | None:
    from packaging.version import Version

    from bundler.lock.hashes import project_files, version_matches
    from bundler.pipsettings import host_pip_settings

    public, url = indexes[0]
    try:
        files = project_files(url, name, host_pip_settings())
    except ExternalError as error:
        return error
    shown = url if url == public else f"{url} (standing for {public})"
    prefix = name.replace("-", "_") + "-"
    builds = sorted({f.filename[len(prefix) :].split("-")[0] for f in files if f.filename.endswith(".whl")}, key=Version)
    if any(version_matches(f.filename, name, version) for f in files):
        return None  # the build is there: the failure is elsewhere (the Python, the platform, a conflict)
    having = f"it lists {name} {', '.join(builds[-6:])}" if builds else f"it lists no {name} at all"
    return ExternalError(
        f"the index {shown} has no {name}=={version}, the Target's build: {having}.",
        hint="Fill the mirror with the Target's build, or point BUNDLER_INDEX_MAP at an index that has it "
        "(the requirements are not at fault). The previous lock was not touched.",
        value=url,
    )
