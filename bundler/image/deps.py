"""The dependency image ``bundler/deps:<key>``: made once per base image and lock, checked
once, reused by every build (and every project) with the same key.

The key covers the dependency Dockerfile (its loopback form: both routes make the same
image), the base image ID, the lock's install body and the list of dependency checks.
When an image with that key and a verdict label exists, nothing is gathered, sent or
checked again. Otherwise:

1. the wheelhouse is gathered from the content-addressed cache (downloading what is
   missing);
2. the image is built by one of two routes. **loopback** (the engine is on this host):
   the cache is served over 127.0.0.1 (serve.py) to a build on the host network, pip
   installs from it, and each wheel is hashed while it is sent. **context** (a remote
   engine, a VM, or ``BUNDLER_WHEELHOUSE_ROUTE=context``): the wheels, hashed again here,
   go in the context to an install stage that is thrown away. A loopback build whose
   pip never reached the server is retried once by the context route;
3. the dependency checks (checks.py) run in a container of the new image;
4. their verdict, the key and the pins' hash become labels (a LABEL-only step, no layer),
   and the image is tagged.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from bundler import __version__
from bundler.engine import BaseImage, Engine
from bundler.errors import BuildError, UsageError
from bundler.image import cleanup, wheelhouse
from bundler.image.checks import Check, check_notes, dependency_checks, run_dependency_checks
from bundler.image.context import write_deps_context, write_dockerfile_context
from bundler.image.dockerfile import ROUTES, Dockerfiles, label_instruction
from bundler.image.labels import DEPS_LABEL, PINS_LABEL, VERDICT_LABEL
from bundler.image.serve import WheelhouseServer
from bundler.image.steps import EngineBuildError, Progress, remove_image, run_engine_build
from bundler.lock.lockfile import Lock
from bundler.target.bundle import Bundle

Say = Callable[[str], None]

DEPS_REPOSITORY = "bundler/deps"
ROUTE_VARIABLE = "BUNDLER_WHEELHOUSE_ROUTE"
INSTALL_NOTE = "pip install --require-hashes --no-deps from the lock, then pip check (in the build)"


@dataclass
class DepsImage:
    reference: str
    image_id: str
    key: str
    reused: bool
    verdict: dict
    route: str = ""  # loopback | context ("" when reused)
    route_note: str = ""
    context_bytes: int = 0  # sent to the engine as the build context
    wheelhouse_bytes: int = 0  # the locked files
    served_bytes: int = 0  # sent over loopback
    seconds: float = 0.0
    notes: list = field(default_factory=list)
    stage_images_removed: list = field(default_factory=list)  # a thrown-away install stage's step images

    def as_dict(self) -> dict:
        return {
            "deps_image": self.reference,
            "deps_reused": self.reused,
            "route": self.route,
            "route_note": self.route_note,
            "deps_context_bytes": self.context_bytes,
            "wheelhouse_bytes": self.wheelhouse_bytes,
            "served_bytes": self.served_bytes,
            "seconds": round(self.seconds, 1),
            "stage_images_removed": self.stage_images_removed,
        }


def pins_sha256(lock: Lock) -> str:
    return hashlib.sha256(lock.install_body.encode("utf-8")).hexdigest()


def deps_key(dockerfiles: Dockerfiles, base_image_id: str, lock: Lock, checks: list[Check]) -> str:
    """What the dependency image depends on: its Dockerfile, the base image, the lock's pins, the checks."""
    payload = "\0".join((dockerfiles.deps_text("loopback"), base_image_id, lock.install_body, json.dumps([c.as_dict() for c in checks])))
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def asked_route() -> str:
    """BUNDLER_WHEELHOUSE_ROUTE ("" when unset); a UsageError for a route bundler does not know."""
    asked = os.environ.get(ROUTE_VARIABLE, "").strip()
    if asked and asked not in ROUTES:
        raise UsageError(
            f"{ROUTE_VARIABLE}={asked!r} is not a route bundler knows.",
            hint=f"Use one of: {', '.join(ROUTES)}, or unset it to let bundler choose.",
            value=asked,
        )
    return asked


def choose_route(engine: Engine) -> tuple[str, str]:
    """(route, why): BUNDLER_WHEELHOUSE_ROUTE when set, else loopback unless the engine is elsewhere."""
    asked = asked_route()
    if asked:
        return asked, f"{ROUTE_VARIABLE}={asked}"
    blocker = engine.loopback_blocker()
    return ("context", blocker) if blocker else ("loopback", "the engine runs on this host")


def reusable(engine: Engine, reference: str) -> tuple[str, dict] | None:
    """(image ID, verdict) of an existing, checked dependency image ``reference``; None when it must be made."""
    image = engine.image(reference)
    if image is None:
        return None
    try:
        verdict = json.loads(image.labels.get(VERDICT_LABEL, ""))
    except ValueError:
        return None
    return (image.id, verdict) if isinstance(verdict, dict) and verdict.get("ok") else None


def dependency_image(
    engine: Engine,
    bundle: Bundle,
    lock: Lock,
    dockerfiles: Dockerfiles,
    base_image: BaseImage,
    work: Path,
    *,
    no_cache: bool = False,
    reference: str | None = None,
    say: Say = lambda text: None,
) -> DepsImage:
    """The checked dependency image for ``lock`` on ``base_image``: reused, or made now."""
    started = time.monotonic()
    checks = dependency_checks(bundle)
    key = deps_key(dockerfiles, base_image.image_id, lock, checks)
    reference = reference or f"{DEPS_REPOSITORY}:{key[:24]}"
    found = None if no_cache else reusable(engine, reference)
    if found is not None:
        say(f"Dependency image {reference} is up to date and checked (same base image, pins and checks): nothing is sent or run.")
        return DepsImage(reference, found[0], key, True, found[1])
    made = _install(engine, bundle, lock, dockerfiles, DepsImage(reference, "", key, False, {}), work, no_cache, say)
    unchecked = made.image_id
    try:
        _check_and_label(engine, made, lock, checks, work, bundle.root, say)
    except BaseException:
        remove_image(engine, unchecked)  # an image that failed its checks is never kept (it may be GBs)
        raise
    repository, version = reference.rsplit(":", 1)
    engine.tag(made.image_id, repository, version)
    made.seconds = time.monotonic() - started
    return made


def _install(engine, bundle, lock: Lock, dockerfiles: Dockerfiles, made: DepsImage, work: Path, no_cache: bool, say) -> DepsImage:
    """The locked packages installed into a new (unchecked) image, by the loopback or the context route."""
    route, why = choose_route(engine)
    sources = {extension.name for extension in bundle.extensions if extension.compile}
    wheels = wheelhouse.gather(lock, bundle.target, sources=sources, verify=route == "context", say=say)
    made.wheelhouse_bytes = sum(wheel.size for wheel in wheels)
    if route == "loopback":
        try:
            made.image_id = _loopback_build(engine, dockerfiles, lock, wheels, work, made, no_cache, say)
        except _LoopbackUnreachable as error:
            made.notes.append(f"the build could not reach 127.0.0.1 ({error}); the wheels went in the build context instead")
            route, why = "context", "the loopback route failed"
            wheels = [wheelhouse.rehash(wheel) for wheel in wheels]
    if route == "context":
        made.image_id = _context_build(engine, dockerfiles, lock, wheels, work, made, no_cache, say)
    made.route, made.route_note = route, why
    return made


def _check_and_label(engine: Engine, made: DepsImage, lock: Lock, checks: list[Check], work: Path, project: Path, say: Say) -> None:
    """Run the checks in the new image, then record their verdict, the key and the pins as labels (no layer)."""
    say(f"Checking the new dependency image: {', '.join(check.name for check in checks)}…")
    results = run_dependency_checks(engine, made.image_id, checks, project=project)
    for note in check_notes(checks, results):
        say(f"note: {note}")
    made.verdict = {"ok": True, "install": INSTALL_NOTE, "checks": results, "pins_sha256": pins_sha256(lock), "bundler": __version__}
    labels = {DEPS_LABEL: made.key, PINS_LABEL: pins_sha256(lock), VERDICT_LABEL: json.dumps(made.verdict, sort_keys=True)}
    context = write_dockerfile_context(f"FROM {made.image_id}\n{label_instruction(labels)}\n", work / "label.tar")
    with Progress() as progress:
        made.image_id = run_engine_build(engine, context, progress)


class _LoopbackUnreachable(Exception):
    pass


def _loopback_build(engine, dockerfiles, lock, wheels, work: Path, made: DepsImage, no_cache: bool, say) -> str:
    text = dockerfiles.deps_text("loopback")
    context = write_dockerfile_context(text, work / "deps.tar")
    made.context_bytes = context.bytes
    with WheelhouseServer(wheels, lock.install_body) as server:
        say(
            f"Dependency image {made.reference}: {len(wheels)} files ({made.wheelhouse_bytes / 1e6:.1f} MB) served from the cache at "
            f"{server.url}, installed with --require-hashes (nothing is committed but the environment)…"
        )
        try:
            image_id = _recorded_build(
                engine,
                context,
                made,
                network_mode=dockerfiles.deps_network("loopback"),
                buildargs={"WHEELHOUSE": server.url.rstrip("/")},
                no_cache=no_cache,
            )
        except EngineBuildError as error:
            _mismatch_error(server.served.mismatches)
            if server.served.requests == 0 and "--find-links" in error.message:  # the install step ran, pip never got through
                raise _LoopbackUnreachable(f"pip never reached {server.url}") from None
            raise
        _mismatch_error(server.served.mismatches)
        made.served_bytes = server.served.bytes
    return image_id


def _mismatch_error(mismatches: list) -> None:
    if not mismatches:
        return
    wheel, actual = mismatches[0]
    raise BuildError(
        f"the cached file {wheel.path} does not match its hash: it is cached under {wheel.sha256} for "
        f"{wheel.pin.name}=={wheel.pin.version}, its bytes hash to {actual}. It was altered after download; nothing was tagged.",
        hint=f"Delete {wheel.path.parent} and build again to download it afresh; if it happens again, check the index you download from.",
        path=wheel.path,
        value=actual,
    )


def _context_build(engine, dockerfiles, lock, wheels, work: Path, made: DepsImage, no_cache: bool, say) -> str:
    context = write_deps_context(dockerfiles.deps_text("context"), lock.install_body, wheels, work / "deps.tar")
    made.context_bytes = context.bytes
    say(
        f"Dependency image {made.reference}: context {context.bytes / 1e6:.1f} MB (wheelhouse {made.wheelhouse_bytes / 1e6:.1f} MB in "
        f"{len(wheels)} files) to an install stage that is thrown away; installing with --require-hashes…"
    )
    return _recorded_build(engine, context, made, network_mode=dockerfiles.deps_network("context"), no_cache=no_cache)


def _recorded_build(engine, context, made: DepsImage, **options) -> str:
    """The engine build; the step images of a stage the result does not stand on are removed, failed or not."""
    with Progress() as progress:
        recorder, image_id = cleanup.StageRecorder(progress), None
        try:
            image_id = run_engine_build(engine, context, recorder, **options)
        finally:  # an install stage holds the wheelhouse and a second copy of the environment
            made.stage_images_removed = cleanup.remove_leftovers(engine, recorder, image_id)
    return image_id
