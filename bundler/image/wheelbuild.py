"""Wheels for the pins that publish none for the Target, made before the dependency image.

The lock's sidecar (bundler/lock/sidecar.py) names each such pin with its source
archive's sha256. For each, in order: a wheel already built for that archive and this
Target (platform, Python, base image) is taken from the cache; otherwise the archive is
downloaded (or taken from the cache) and checked against the lock's hash, built in the
builder container (bundler/image/builder.py) and checked (name, version, tags that fit
the Target). The wheel is stored in the content-addressed wheel cache under its own
sha256 and the record ``builds/<archive sha256>/<key>.json`` remembers it (the build
writes nothing beside the lock). The build then installs a lock whose line for that
pin allows exactly that wheel's hash: ``--require-hashes`` like every other wheel.

Wheels inside the project (``./wheels/x.whl`` in requirements.in) are checked against
the hash the lock recorded and placed in the same cache, so the build installs that file.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from dataclasses import replace
from pathlib import Path

from packaging.utils import canonicalize_name, parse_wheel_filename
from packaging.version import Version

from bundler.contracts.lockformat import INDEX_OPTIONS, Pin, render_body
from bundler.engine import builderimage
from bundler.errors import BuildError, ExternalError, LockError
from bundler.fsutil import atomic_write_text, sha256_file
from bundler.image import builder, preflight, torchenv
from bundler.image.wheelhouse import cache_root, download, find_cached
from bundler.lock import torchbuild
from bundler.lock.lockfile import Lock
from bundler.lock.sidecar import Sidecar, make_sidecar, read_sidecar, sidecar_path, sidecar_problems
from bundler.lock.sources import PYPI_SIMPLE, index_files, target_tags
from bundler.pipsettings import cache_dir, host_pip_settings, open_url


def target_key(target, base_reference: str) -> str:
    return f"{target.platform} python{target.python} {base_reference}"


def prepare(lock: Lock, bundle, engine, base, say=lambda text: None) -> tuple[Lock, list[str]]:
    """The lock the image installs (source-built pins allow their wheel's hash) and notes."""
    notes: list[str] = []
    side = _sidecar(lock, bundle, notes)
    _stage_project_wheels(bundle, side)
    if not side.source_builds:
        return lock, notes
    replacements: dict[str, tuple[str, str]] = {}
    plans = sorted(((item, _torch_plan(item, lock, bundle.target, base)) for item in side.source_builds), key=_build_order(lock))
    checked = False
    for item, plan in plans:
        key = _key(bundle.target, base, plan)
        if not checked and (plan is not None or builder.needed_compilers(_sdist(item, lock))):
            checked = True  # the first build that compiles: what the import check would refuse is read before it
            waiting = [i["name"] for i, p in plans[plans.index((item, plan)) :] if _cached_wheel(i, _key(bundle.target, base, p)) is None]
            if waiting:
                _preflight(side, lock, bundle, replacements, waiting, say)
        wheel, digest = _wheel_for(item, key, lock, bundle, engine, base, say, plan)
        recorded = item.get("wheels", {}).get(key)
        if recorded and recorded.get("sha256") != digest:
            notes.append(
                f"{item['name']}'s wheel was built again and differs from the one its sidecar records; {digest[:16]}… is installed"
            )
        replacements[item["name"]] = (item["version"], digest)
    return with_wheel_hashes(lock, replacements), notes


def _build_order(lock: Lock):
    """Pure Python archives first (seconds each), then those that compile, those against torch last."""

    def order(pair: tuple[dict, torchenv.TorchBuildPlan | None]) -> int:
        item, plan = pair
        return 2 if plan is not None else 1 if builder.needed_compilers(_sdist(item, lock)) else 0

    return order


def _key(target, base, plan: torchenv.TorchBuildPlan | None) -> str:
    return target_key(target, base.reference) + (f" {plan.cache_key}" if plan else "")


def _preflight(side: Sidecar, lock: Lock, bundle, built: dict[str, tuple[str, str]], waiting: list[str], say) -> None:
    """Refuse before compiling against torch what the dependency image's import check would refuse (preflight.py)."""
    by_name = {canonicalize_name(pin.name): pin for pin in lock.pins}
    compiled = {canonicalize_name(name) for name in waiting}
    direct = [by_name[name] for name in sorted({canonicalize_name(d) for d in side.direct}) if name in by_name and name not in compiled]
    shippers = preflight.provider_names()
    provider_pins = [pin for name, pin in by_name.items() if name in shippers]
    wanted = [_as_built(pin, built) for pin in direct + provider_pins]
    missing = [pin for pin in wanted if find_cached(pin) is None]
    if missing:
        download(missing, lock.indexes, bundle.target, say=say)
    # a pin built from its source archive has that archive in the cache until its wheel is built: nothing to read yet
    wheels = {
        canonicalize_name(pin.name): found for pin in wanted if (found := find_cached(pin)) is not None and found.path.name.endswith(".whl")
    }
    providers = [
        preflight.Provider(pin.name, pin.version, preflight.WheelModules.read(wheels[canonicalize_name(pin.name)].path))
        for pin in provider_pins
        if canonicalize_name(pin.name) in wheels
    ]
    say(f"Reading what {len(direct)} direct dependencies import from {', '.join(p.dist for p in providers)} before compiling…")
    stale_found = [
        stale
        for pin in direct
        if canonicalize_name(pin.name) in wheels and canonicalize_name(pin.name) not in shippers
        for stale in preflight.stale_imports(pin.name, pin.version, wheels[canonicalize_name(pin.name)].path, providers)
    ]
    if stale_found:
        raise preflight.refuse(stale_found, waiting, bundle.requirements)


def _as_built(pin: Pin, built: dict[str, tuple[str, str]]) -> Pin:
    return replace(pin, hashes=(built[pin.name][1],)) if pin.name in built else pin


def _sidecar(lock: Lock, bundle, notes: list[str]) -> Sidecar:
    """The lock's sidecar as `bundler lock` wrote it; when missing or out of date, made again in memory
    (the build never writes beside the lock: the cache's records remember the wheels it built)."""
    side = read_sidecar(lock.path)
    if side is not None and not sidecar_problems(lock, side):
        return side
    from bundler.lock.spec import make_spec

    side = make_sidecar(make_spec(bundle, bundle.target), lock, notes)
    notes.append(f"{sidecar_path(lock.path).name} is missing or out of date: made again for this build; `bundler lock` writes it")
    return side


def _stage_project_wheels(bundle, side: Sidecar) -> None:
    for item in side.project_wheels:
        path = bundle.root / item["path"]
        if not path.is_file() or sha256_file(path) != item["sha256"]:
            raise LockError(
                f"the project wheel {path} is missing or changed since the lock recorded its sha256 {item['sha256'][:16]}….",
                hint="Run `bundler lock` again (it locks the wheel as it is now).",
                path=path,
            )
        store(path, item["sha256"])


def store(path: Path, digest: str) -> Path:
    """Place ``path`` in the content-addressed cache under ``digest`` (already verified)."""
    folder = cache_root() / digest[:2] / digest
    final = folder / path.name
    if not final.exists():
        folder.mkdir(parents=True, exist_ok=True)
        partial = folder / f".{path.name}.partial"
        shutil.copyfile(path, partial)
        os.replace(partial, final)
    return final


def _record_path(sdist_sha256: str, key: str) -> Path:
    return cache_dir() / "builds" / sdist_sha256[:2] / sdist_sha256 / (hashlib.sha256(key.encode()).hexdigest()[:16] + ".json")


def _cached_wheel(item: dict, key: str) -> tuple[Path, str] | None:
    candidates = []
    record = _record_path(item["sdist_sha256"], key)
    if record.is_file():
        try:
            candidates.append(json.loads(record.read_text(encoding="utf-8"))["sha256"])
        except (ValueError, KeyError):
            pass
    if item.get("wheels", {}).get(key):
        candidates.append(item["wheels"][key]["sha256"])
    for digest in candidates:
        found = find_cached(Pin(item["name"], item["version"], (digest,)))
        if found is not None and sha256_file(found.path) == digest:
            return found.path, digest
    return None


def _torch_plan(item: dict, lock: Lock, target, base) -> torchenv.TorchBuildPlan | None:
    """How ``item`` is built against the Target's torch (what its cache key names), or None when its build does not
    import torch. The torch wheel's digest is the wheel cache's own name for it: nothing is hashed or fetched again
    while the torch wheel is cached, so a rebuild whose wheel is cached costs no pass over torch."""
    sdist = _sdist(item, lock)
    if not item.get("build_imports_torch") and not torchenv.imports_torch(sdist):
        return None
    needed = torchbuild.needed_standard(target)
    asked = torchbuild.older_standard(sdist, needed)
    if asked is not None:  # refused in seconds, before torch is installed in the builder
        message, hint = torchbuild.older_standard_refusal(f"{item['name']}=={item['version']}", target.torch, needed, asked, None)
        raise BuildError(message, hint=hint, value=item["name"])
    torch_pin = next((pin for pin in lock.pins if canonicalize_name(pin.name) == "torch"), None)
    if torch_pin is None:
        raise LockError(
            f"{item['name']}=={item['version']} builds against torch, but the lock pins no torch.",
            hint="Add torch to requirements.in and run `bundler lock`.",
            path=lock.path,
        )
    cached = find_cached(torch_pin)
    if cached is None:
        download([torch_pin], lock.indexes, target)
        cached = find_cached(torch_pin)
    if cached is None:
        raise BuildError(
            f"{item['name']}=={item['version']} builds against torch=={torch_pin.version}, whose wheel for the Target was not downloaded.",
            hint="Check the network and the lock's indexes, then build again.",
            value=item["name"],
        )
    requires, ninja_off = torchenv.build_requires(sdist), torchenv.turns_ninja_off(sdist)
    return torchenv.plan(target, base.reference, f"torch=={torch_pin.version}", cached.sha256, requires, ninja_off=ninja_off)


def _against_torch(plan: torchenv.TorchBuildPlan, lock: Lock, target) -> builder.AgainstTorch:
    """What the build installs first: torch and what it needs from the lock, each file hashed again (only on a build)."""
    wheels = torchenv.torch_closure(lock, target)
    constraints = [f"{pin.name}=={pin.version}" + (f" ; {pin.marker}" if pin.marker else "") for pin in lock.pins]
    return builder.AgainstTorch(plan, wheels, constraints, cache_root())


def _wheel_for(item: dict, key: str, lock: Lock, bundle, engine, base, say, plan=None) -> tuple[Path, str]:
    target = bundle.target
    cached = _cached_wheel(item, key)
    if cached is not None:
        return cached
    sdist = _sdist(item, lock)
    against = _against_torch(plan, lock, target) if plan is not None else None
    if against is not None and against.plan.base != base.reference:
        from bundler.engine import base_image

        base = base_image(engine, against.plan.base, say=say)  # the devel base: nvcc / hipcc
    packages = builderimage.archive_packages(builder.member_list(sdist), bundle.system_packages)
    system = bundle.system_packages if packages else ()  # what it compiles against: the headers the bundle installs
    image = builderimage.builder_image(engine, base, f"python{target.python}", packages, say)
    python = f"python{target.python}"
    inputs = builder.Inputs(bundle.requirements, tuple(system), bundle.target)
    wheel, _ = builder.build_in_container(engine, image, python, sdist, item["name"], item["version"], say, against, inputs)
    try:
        _check_wheel(wheel, item, target)
        digest = sha256_file(wheel)
        stored = store(wheel, digest)
    finally:
        shutil.rmtree(wheel.parent, ignore_errors=True)
    record = _record_path(item["sdist_sha256"], key)
    record.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(record, json.dumps({"key": key, "file": stored.name, "sha256": digest, "sdist": item["sdist"]}, indent=2) + "\n")
    return stored, digest


def _check_wheel(wheel: Path, item: dict, target) -> None:
    name, version, _, tags = parse_wheel_filename(wheel.name)
    if canonicalize_name(name) != canonicalize_name(item["name"]) or version != Version(item["version"]):
        raise BuildError(
            f"building {item['sdist']} gave {wheel.name}, not a wheel of {item['name']}=={item['version']}.",
            hint="The source archive builds another package or version than the lock names; pin another release.",
            value=wheel.name,
        )
    if not tags & target_tags(target):
        raise BuildError(
            f"the wheel built from {item['sdist']} ({wheel.name}) does not fit CPython {target.python} on {target.platform}.",
            hint="The base image's Python differs from the Target's: check [target] python and base_image in bundle.toml.",
            value=wheel.name,
        )


def _sdist(item: dict, lock: Lock) -> Path:
    """The source archive from the cache, else from the lock's indexes, checked against the lock's hash."""
    pin = Pin(item["name"], item["version"], (item["sdist_sha256"],))
    found = find_cached(pin)
    if found is not None and sha256_file(found.path) == item["sdist_sha256"]:
        return found.path
    indexes = [PYPI_SIMPLE] + [url for url in lock.indexes if url.rstrip("/") != PYPI_SIMPLE]
    for index in indexes:
        try:
            files = index_files(index, item["name"])
        except (ExternalError, OSError, ValueError):
            continue
        match = next((f for f in files if f.sha256 == item["sdist_sha256"] or f.filename == item["sdist"]), None)
        if match is None:
            continue
        with tempfile.TemporaryDirectory(prefix="bundler-sdist-") as work:
            try:
                path = _download(match.url, Path(work) / item["sdist"])
            except (OSError, ValueError) as error:
                raise ExternalError(
                    f"the source archive {item['sdist']} could not be downloaded from {match.url}: {error}.",
                    hint="Check the network and the proxy; the archive must match the lock's sha256.",
                    value=item["sdist"],
                ) from None
            if sha256_file(path) != item["sdist_sha256"]:
                raise BuildError(
                    f"{match.url} does not match the lock's sha256 {item['sdist_sha256']} for {item['sdist']}.",
                    hint="The index serves another file than the one locked; run `bundler lock --upgrade`.",
                    value=item["sdist"],
                )
            return store(path, item["sdist_sha256"])
    raise ExternalError(
        f"the source archive {item['sdist']} ({item['name']}=={item['version']}) was found on none of the lock's indexes "
        f"({', '.join(indexes)}).",
        hint="Check the network, the proxy and BUNDLER_INDEX_MAP, then build again.",
        value=item["sdist"],
    )


def _download(url: str, dest: Path) -> Path:
    if url.startswith("file://"):
        from urllib.parse import unquote, urlsplit

        shutil.copyfile(unquote(urlsplit(url).path), dest)
        return dest
    with open_url(url, host_pip_settings(), timeout=120) as response, open(dest, "wb") as out:
        shutil.copyfileobj(response, out, 1 << 20)
    return dest


def with_wheel_hashes(lock: Lock, replacements: dict[str, tuple[str, str]]) -> Lock:
    """``lock`` with each replaced pin allowing exactly its built wheel's sha256 (its extras and marker kept)."""
    pins = [
        replace(pin, version=replacements[pin.name][0], hashes=(replacements[pin.name][1],)) if pin.name in replacements else pin
        for pin in lock.pins
    ]
    index_lines = [line for line in lock.body.splitlines() if line.startswith(INDEX_OPTIONS)]
    return replace(lock, body=render_body(index_lines, pins), pins=tuple(pins))
