"""`bundler build`: the bundle's image, built through the Docker SDK, smoke-tested, then tagged.

Order of work (nothing is tagged until everything before it passed):
1. the lock must be fresh (`bundler lock` otherwise); the flavour and the Dockerfiles are
   chosen from bundle.toml (``--base`` overrides the base image);
2. the engine must answer and the base image be local or pullable;
3. the dependency image ``bundler/deps:<key>`` (images/<flavour>-deps.Dockerfile: base,
   system setup, the locked wheels installed offline with --require-hashes into
   /opt/venv, of which only /opt/venv is kept). The key covers that Dockerfile, the base
   image ID and the lock's pins; while it exists, no wheel is gathered or sent again.
   Otherwise the wheelhouse is gathered from the content-addressed cache (hash-checked)
   and sent as the dependency build's context;
4. the project context: Dockerfile, bundler's entry point and the diagnostics folder, the
   project through .dockerignore rules (secrets withheld and listed), config last; its
   size is reported before it is sent;
5. the build, offline (``network_mode="none"``) unless a devel base needs its mirror,
   OCI and bundler labels in one LABEL step at the end;
6. the smoke test in the new image, offline: the lock verified in place
   (lockfile.install_check_command: pip install --no-index of the lock finds everything
   installed, pip check, torch imported and its build compared with the Target);
7. the size report against ``size_budget_mb`` (``--strict`` fails above it);
8. the tag, then ``--export`` and ``--push``.
A failure in 5-7 removes the new image, so no tag ever names a half-checked image.

Smoke test and the fake wheels of the tests: the tiny torch wheels of tests/fakeindex.py
answer ``torch.__version__`` and ``torch.version.cuda/hip`` like the real ones, so the
smoke test runs unchanged on them: it checks the installed build, not the GPU (that is
`bundler diagnose --image`'s device stage). GPU flags (bundler.engine.device_flags)
are given to the smoke container only when the host has a GPU of the Target's backend.
"""

from __future__ import annotations

import hashlib
import re
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from bundler import engine as engines
from bundler.image import cleanup, handoff, importcheck, wheelbuild, wheelhouse
from bundler.image.context import ProjectFiles, collect, write_deps_context, write_project_context
from bundler.image.dockerfile import Dockerfiles, default_base, flavour_for, render
from bundler.image.labels import DEPS_LABEL, LOCK_LABEL, labels_for
from bundler.image.runcommand import run_commands
from bundler.image.size import SizeReport, enforce, size_report
from bundler.image.steps import Progress, image_exists, remove_image, run_engine_build, smoke_test
from bundler.lock.lockfile import Lock, fresh_lock
from bundler.target.bundle import Bundle, update_target
from bundler.target.versions import build_name

DEPS_REPOSITORY = "bundler/deps"


@dataclass
class BuildResult:
    tag: str
    image_id: str
    flavour: str
    base: str
    base_recorded: str
    labels: dict
    size: SizeReport
    context_bytes: int
    wheelhouse_bytes: int
    project_bytes: int
    secrets_excluded: list
    smoke: dict
    notes: list = field(default_factory=list)
    dockerfile: str = ""
    deps: dict = field(default_factory=dict)
    export: dict | None = None
    push: dict | None = None
    seconds: float = 0.0
    commands: dict = field(default_factory=dict)  # docker run lines that pass as printed (image/runcommand.py)

    def as_dict(self) -> dict:
        return {
            "ok": True,
            "tag": self.tag,
            "image_id": self.image_id,
            "flavour": self.flavour,
            "base_image": self.base,
            "base_recorded": self.base_recorded,
            "labels": self.labels,
            "size": self.size.as_dict(),
            "context": {
                "bytes": self.context_bytes,
                "wheelhouse_bytes": self.wheelhouse_bytes,
                "project_bytes": self.project_bytes,
                "deps_context_bytes": self.deps.get("deps_context_bytes", 0),
                "deps_image": self.deps.get("deps_image"),
                "deps_reused": self.deps.get("deps_reused"),
                "stage_images_removed": self.deps.get("stage_images_removed", []),
            },
            "secrets_excluded": self.secrets_excluded,
            "smoke_test": self.smoke,
            "notes": self.notes,
            "export": self.export,
            "push": self.push,
            "seconds": round(self.seconds, 1),
            "commands": self.commands,
        }


def default_tag(bundle: Bundle, lock_sha: str) -> str:
    name = re.sub(r"[^a-z0-9._-]+", "-", bundle.name.lower()).strip("-._") or bundle.package
    return f"bundler/{name}:{build_name(bundle.target.backend, bundle.target.accelerator)}-{lock_sha[:12]}"


def deps_key(dockerfiles: Dockerfiles, base_image_id: str, install_body: str) -> str:
    """What the dependency image depends on: its Dockerfile, the base image and the lock's pins."""
    payload = "\0".join((dockerfiles.deps_text, base_image_id, install_body))
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def record_base_digest(bundle: Bundle, base, overridden: bool) -> bool:
    """Fill bundle.toml's base_digest when the Target's own base came from a registry."""
    if overridden or not base.digest:
        return False
    digest = base.digest.split("@")[-1]
    if bundle.target.base_digest == digest:
        return False
    update_target(bundle, replace(bundle.target, base_digest=digest))
    return True


def dependency_image(engine, bundle: Bundle, lock: Lock, dockerfiles: Dockerfiles, base_image, work: Path, no_cache: bool, say) -> dict:
    """``bundler/deps:<key>``, built from the wheelhouse unless an image with that key exists."""
    key = deps_key(dockerfiles, base_image.image_id, lock.install_body)
    deps_image = f"{DEPS_REPOSITORY}:{key[:24]}"
    sent = {"deps_context_bytes": 0, "wheelhouse_bytes": 0, "deps_image": deps_image, "deps_reused": True}
    if not no_cache and image_exists(engine, deps_image):
        say(f"Dependency image {deps_image} is up to date (same base image and lock): no wheel is sent.")
        return sent
    sent["deps_reused"] = False
    sources = {extension.name for extension in bundle.extensions if extension.compile}
    wheels = wheelhouse.gather(lock, bundle.target, sources=sources, say=say)
    context = write_deps_context(dockerfiles, lock.install_body, wheels, work / "deps.tar")
    sent.update(deps_context_bytes=context.bytes, wheelhouse_bytes=sum(w.size for w in wheels))
    say(
        f"Dependency image {deps_image}: context {context.bytes / 1e6:.1f} MB (wheelhouse {sent['wheelhouse_bytes'] / 1e6:.1f} MB "
        f"in {len(wheels)} files); installing offline with --require-hashes…"
    )
    with Progress() as progress:
        recorder, deps_id = cleanup.StageRecorder(progress), None
        try:
            deps_id = run_engine_build(engine, context, dockerfiles.network, {DEPS_LABEL: key, LOCK_LABEL: lock.sha256}, recorder, no_cache)
        finally:  # the install stage's images (wheelhouse + a copy of the environment) are not needed
            sent["stage_images_removed"] = cleanup.remove_leftovers(engine, recorder, deps_id)
    repository, version = deps_image.rsplit(":", 1)
    engine.api.tag(deps_id, repository, version)
    return sent


def run_build(
    bundle: Bundle,
    *,
    tag: str | None = None,
    base: str | None = None,
    export: Path | None = None,
    push: str | None = None,
    strict: bool = False,
    no_cache: bool = False,
    say=lambda text: None,
) -> BuildResult:
    started = time.monotonic()
    lock = fresh_lock(bundle)
    flavour = flavour_for(bundle)
    dockerfiles = render(bundle, flavour, base or default_base(bundle, flavour))
    engine = engines.client()
    base_image = engines.base_image(engine, dockerfiles.base, say=say)
    notes = [base_image.note] if base_image.note else []
    lock, built = wheelbuild.prepare(lock, bundle, engine, base_image, say)  # pins without a wheel for the Target
    notes += built
    tag = tag or default_tag(bundle, lock.sha256)
    handoff.split_reference(tag)  # a bad --tag is refused before the build
    if push:
        handoff.split_reference(push)
    files = collect(bundle.root)
    if files.secrets:
        say(f"Left out of the build context as secrets ({len(files.secrets)}): {', '.join(files.secrets)}")
    labels = labels_for(bundle, dockerfiles.flavour, base_image, lock.sha256)
    with tempfile.TemporaryDirectory(prefix="bundler-context-") as work:
        sent = dependency_image(engine, bundle, lock, dockerfiles, base_image, Path(work), no_cache, say)
        image_id, context_bytes = _project_image(engine, bundle, dockerfiles, sent["deps_image"], labels, files, Path(work), no_cache, say)
    try:
        say("Smoke test in the new image: the lock in place, pip check, the torch build…")
        smoke = smoke_test(engine, image_id, bundle)
        say("Import check in the new image: every direct dependency's top-level modules…")
        smoke["imports"] = importcheck.check_imports(engine, image_id, bundle, say)
        report = size_report(engine, image_id, bundle.size_budget_mb)
        warning = enforce(report, strict, str(bundle.path))
    except BaseException:
        remove_image(engine, image_id)
        raise
    if warning:
        notes.append(warning)
    repository, version = handoff.split_reference(tag)
    engine.api.tag(image_id, repository, version)
    if record_base_digest(bundle, base_image, overridden=base is not None):
        notes.append(f"bundle.toml [target] base_digest set to {base_image.digest.split('@')[-1]}")
    result = BuildResult(
        tag=f"{repository}:{version}",
        image_id=image_id,
        flavour=dockerfiles.flavour,
        base=dockerfiles.base,
        base_recorded=base_image.recorded,
        labels=labels,
        size=report,
        context_bytes=context_bytes + sent["deps_context_bytes"],
        wheelhouse_bytes=sent["wheelhouse_bytes"],
        project_bytes=files.included_bytes,
        secrets_excluded=files.secrets,
        smoke=smoke,
        notes=notes,
        dockerfile=dockerfiles.final_text(sent["deps_image"], labels),
        deps=sent,
        commands=run_commands(f"{repository}:{version}", bundle.target.backend),
    )
    if export is not None:
        result.export = handoff.export(engine, image_id, Path(export), names=[result.tag], say=say).as_dict()
    if push:
        result.push = handoff.push(engine, image_id, push, keep_tag=push == result.tag, say=say).as_dict()
    result.seconds = time.monotonic() - started
    return result


def _project_image(
    engine, bundle: Bundle, dockerfiles: Dockerfiles, deps_image: str, labels: dict, files: ProjectFiles, work: Path, no_cache: bool, say
) -> tuple[str, int]:
    context = write_project_context(bundle, dockerfiles.final_text(deps_image, labels), files, work / "project.tar")
    say(
        f"Build context: {context.bytes / 1e6:.2f} MB (project {files.included_bytes / 1e6:.2f} MB in {len(files.included)} files; "
        f"{files.ignored_count} files ignored)."
    )
    say(
        f"Building the {dockerfiles.flavour} image for {bundle.target.describe()} on {dockerfiles.base}"
        + (" (offline)." if not dockerfiles.network else " (the system layer uses the distribution's mirror).")
    )
    with Progress() as progress:
        image_id = run_engine_build(engine, context, dockerfiles.network, {}, progress, no_cache)
    return image_id, context.bytes
