"""`bundler lock` from start to end: Target, spec, resolution, lint, the lock written.

Order of work (nothing is written until everything before it passed):
1. the requested Target (bundle.toml + flags) is checked against the compatibility table;
2. the spec: labelled pins for torch and its companions, index URLs, base image;
3. resolution with pip-compile for the Target — on the host when the host *is* the
   Target (Linux, same arch, same Python minor), otherwise inside the target image;
4. lint, then the lock is written atomically, then bundle.toml [target] is updated.

Resolution never sees this host's pip configuration (bundler/pipsettings.py).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from bundler import __version__
from bundler.errors import BundlerError, LockError
from bundler.fsutil import atomic_write_text
from bundler.lock.companions import check_companions
from bundler.lock.lint import ensure_lintless
from bundler.lock.lockfile import LockHeader, read_lock, render_lock, target_fields
from bundler.lock.pinfiles import with_pins_refused
from bundler.lock.request import requested_target
from bundler.lock.requirements import DirectReferenceError
from bundler.lock.resolve import Resolution, resolve
from bundler.lock.sidecar import make_sidecar, read_sidecar, sidecar_problems, write_sidecar
from bundler.lock.spec import LockSpec, make_spec
from bundler.pipsettings import host_pip_settings
from bundler.target.bundle import Bundle, Target, update_target
from bundler.target.table import CompatTable
from bundler.target.table_file import load_table


# ----- the whole command ---------------------------------------------------------------
@dataclass
class LockResult:
    spec: LockSpec
    action: str  # planned | unchanged | written
    lock_path: Path
    resolution: Resolution | None = None
    target_updated: bool = False
    backup: Path | None = None
    sidecar: dict | None = None

    def as_dict(self) -> dict:
        data = {"ok": True, "action": self.action, "lock": str(self.lock_path), "target_updated": self.target_updated}
        data.update(self.spec.as_dict())
        if self.resolution:
            data["resolved_in"] = self.resolution.where
            data["resolve_seconds"] = round(self.resolution.seconds, 3)
        if self.backup:
            data["backup"] = str(self.backup)
        if self.sidecar:
            data["source_builds"] = self.sidecar["source_builds"]
        return data


def _with_the_pins(error: DirectReferenceError, bundle: Bundle, target: Target, table: CompatTable, resolver: str) -> LockError:
    """The refusal of the direct references, and what the other lines' exact pins say (as it stands when those
    lines cannot be read either)."""
    try:
        rest = make_spec(bundle, target, table, resolver, skip_references=True)
    except BundlerError:
        return error
    return with_pins_refused(error, rest)


def run_lock(
    bundle: Bundle,
    *,
    cuda=None,
    rocm=None,
    cpu=False,
    torch=None,
    python=None,
    torch_index=None,
    platform=None,
    resolver="pip-tools",
    upgrade=False,
    dry_run=False,
    engine: str | None = None,
    say=lambda text: None,
) -> LockResult:
    table = load_table()
    target = requested_target(
        bundle, table, cuda=cuda, rocm=rocm, cpu=cpu, torch=torch, python=python, torch_index=torch_index, platform=platform
    )
    try:
        spec = make_spec(bundle, target, table, resolver)
    except DirectReferenceError as error:
        raise _with_the_pins(error, bundle, target, table, resolver) from None
    if dry_run:
        return LockResult(spec, "planned", spec.lock_path)
    lock = read_lock(spec.lock_path, spec.requirements_in, target, spec.bundle.requirements)
    state = lock.state
    if state.status == "tampered" and not upgrade:
        raise LockError(
            f"{state.detail} bundler will not resolve over a lock it did not write as it is.",
            hint=f"Look at the edit (e.g. `git diff {spec.lock_path.name}`); to regenerate it run `bundler lock --upgrade` "
            f"(the edited file is kept as {spec.lock_path.name}.edited).",
            path=spec.lock_path,
        )
    if state.status == "fresh" and not upgrade and target == bundle.target:
        say(f"{spec.lock_path.name} is up to date for {target.describe()} (input hash and body hash match); nothing to resolve.")
        return LockResult(spec, "unchanged", spec.lock_path, sidecar=refresh_sidecar(spec, lock, say))
    previous = None
    old = state.header
    same_build = old is not None and (old.build, old.torch_index, old.target.get("python")) == (
        spec.build.tag,
        spec.build.source,
        target.python,
    )
    if state.status in ("fresh", "stale") and same_build:
        previous = lock.install_body
    say(
        f"Resolving {target.describe()} against {' + '.join([spec.index_url, *spec.extra_index_urls])}"
        + (f" in a container ({spec.host_mismatch})" if spec.host_mismatch else f" on this host with {spec.resolver}")
        + " …"
    )
    resolution = resolve(spec, previous, upgrade, engine, say)
    where = "on this host" if resolution.where == "host" else f"in a {resolution.where}"
    header = LockHeader(
        target=target_fields(target),
        build=spec.build.tag,
        index_url=spec.index_url,
        extra_index_urls=tuple(spec.extra_index_urls + host_pip_settings().extra_index_urls),
        base_image=spec.base_image,
        bundler_version=__version__,
        input_sha256=spec.input_sha256,
        resolver=f"{resolution.resolver} {where} for {target.platform}",
    )
    text = render_lock(spec.lock_path.name, header, resolution.body, spec.bundle.requirements)
    pulled_in = check_companions(resolution.body, spec.build, spec.pins, Path(bundle.requirements).name, table, target)
    if pulled_in.refusals:
        why, route = pulled_in.refusals[0]
        raise LockError(
            f"the lock resolved for {target.describe()} was not written: {why}.", hint=route, path=bundle.root / bundle.requirements
        )
    ensure_lintless(text, target, spec.pins, spec.needs_setuptools, spec.lock_path, spec.bundle.requirements)
    spec.warnings.extend(pulled_in.warnings)
    backup = None
    if state.status == "tampered":
        backup = spec.lock_path.with_name(spec.lock_path.name + ".edited")
        shutil.copy2(spec.lock_path, backup)
    atomic_write_text(spec.lock_path, text)
    spec.notes.extend(resolution.notes + pulled_in.notes)
    side = refresh_sidecar(spec, read_lock(spec.lock_path, spec.requirements_in, target, spec.bundle.requirements), say)
    updated = target != bundle.target
    if updated:
        update_target(bundle, target)
    return LockResult(spec, "written", spec.lock_path, resolution, updated, backup, side)


def refresh_sidecar(spec: LockSpec, lock, say) -> dict:
    """Write the lock's sidecar unless the one on disk already agrees with the lock."""
    try:
        side = read_sidecar(spec.lock_path)
    except LockError:
        side = None
    if side is None or sidecar_problems(lock, side) or side.direct != spec.requirements.direct:
        side = make_sidecar(spec, lock, spec.notes)
        say(f"Wrote {write_sidecar(spec.lock_path, side).name} (direct dependencies, pins built from source, project wheels).")
    else:
        spec.notes.extend(
            f"{item['name']}=={item['version']} will be built from its source archive: {item['why']}." for item in side.source_builds
        )
    return side.as_dict()
