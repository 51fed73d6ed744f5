"""`bundler build`: the bundle's image, built through the engine (Docker or Podman), checked, then tagged.

Order of work (nothing is tagged until everything before it passed):
1. the lock must be fresh (`bundler lock` otherwise); the flavour and the Dockerfiles are
   chosen from bundle.toml (``--base`` overrides the base image);
2. the engine must answer and the base image be local or pullable;
3. the dependency image (deps.py): reused with its recorded verdict while its key
   (Dockerfile, base image, pins, checks) is unchanged; otherwise made from the
   wheelhouse (over loopback, or in the context when the engine is elsewhere) and checked
   once in a container;
4. the project context: Dockerfile, bundler's entry point and the diagnostics folder, the
   project through .dockerignore rules (secrets withheld and listed), config last; its
   size is reported before it is sent;
5. the project build, offline (``network_mode="none"``), OCI and bundler labels in one
   LABEL step at the end;
6. the project checks (checks.py), without starting a container: user, entry point,
   the lock against the dependency image's pins, config files that parse;
7. the size report against ``size_budget_mb`` (``--strict`` fails above it);
8. with ``--check-reproducible``: everything built a second time, cold (the dependency
   image too, under a temporary name), and the two compared layer by layer
   (reproducible.py); a difference names the first differing file and fails the command;
9. the tag, then ``--export`` and ``--push``.
A failure in 5-8 removes the new image, so no tag ever names a half-checked image.
"""

from __future__ import annotations

import re
import secrets
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from bundler import engine as engines
from bundler.engine import BaseImage, Engine
from bundler.errors import FindingsError
from bundler.image import handoff, projectwheel, wheelbuild
from bundler.image.checks import Verdict, context_checks, project_checks
from bundler.image.context import ProjectFiles, collect, write_project_context
from bundler.image.deps import DepsImage, asked_route, dependency_image, pins_sha256
from bundler.image.dockerfile import Dockerfiles, default_base, flavour_for, render
from bundler.image.labels import labels_for
from bundler.image.reproducible import compare
from bundler.image.runcommand import run_commands
from bundler.image.size import SizeReport, enforce, size_report
from bundler.image.steps import Progress, remove_image, run_engine_build, untag
from bundler.lock.lockfile import Lock, fresh_lock
from bundler.target.bundle import Bundle, update_target
from bundler.target.versions import build_name

Say = Callable[[str], None]
CHECK_REPOSITORY = "bundler/check"  # the second build of --check-reproducible, removed afterwards


@dataclass
class Plan:
    """What every build of this bundle shares: the lock, the Dockerfiles, the base, labels, files."""

    bundle: Bundle
    lock: Lock
    dockerfiles: Dockerfiles
    engine: Engine
    base_image: BaseImage
    labels: dict[str, str]
    files: ProjectFiles
    notes: list[str]  # what preparing the lock said (wheels built from source)
    project_wheel: projectwheel.ProjectWheel | None = None  # [build] install_project: the project's own wheel


@dataclass
class Built:
    image_id: str
    deps: DepsImage
    context_bytes: int
    dockerfile: str
    smoke: dict


@dataclass
class BuildResult:
    tag: str
    built: Built
    plan: Plan
    size: SizeReport
    notes: list = field(default_factory=list)
    export: dict | None = None
    push: dict | None = None
    reproducible: dict | None = None
    seconds: float = 0.0
    commands: dict = field(default_factory=dict)  # docker run lines that pass as printed (image/runcommand.py)

    @property
    def image_id(self) -> str:
        return self.built.image_id

    @property
    def smoke(self) -> dict:
        return self.built.smoke

    def as_dict(self) -> dict:
        deps, plan = self.built.deps, self.plan
        return {
            "ok": True,
            "tag": self.tag,
            "image_id": self.image_id,
            "flavour": plan.dockerfiles.flavour,
            "base_image": plan.dockerfiles.base,
            "base_recorded": plan.base_image.recorded,
            "labels": plan.labels,
            "size": self.size.as_dict(),
            "context": {
                "bytes": self.built.context_bytes + deps.context_bytes,
                "project_context_bytes": self.built.context_bytes,
                "project_bytes": plan.files.included_bytes,
            }
            | deps.as_dict(),
            "secrets_excluded": plan.files.secrets,
            "project_wheel": plan.project_wheel.as_dict() if plan.project_wheel else None,
            "smoke_test": self.smoke,
            "reproducible": self.reproducible,
            "notes": self.notes,
            "export": self.export,
            "push": self.push,
            "seconds": round(self.seconds, 1),
            "commands": self.commands,
        }


def default_tag(bundle: Bundle, lock_sha: str) -> str:
    name = re.sub(r"[^a-z0-9._-]+", "-", bundle.name.lower())
    name = re.sub(r"[._-]{2,}", "-", name).strip("-._") or bundle.package.replace("_", "-")  # one separator between parts
    return f"bundler/{name}:{build_name(bundle.target.backend, bundle.target.accelerator)}-{lock_sha[:12]}"


def record_base_digest(bundle: Bundle, base: BaseImage, overridden: bool) -> bool:
    """Fill bundle.toml's base_digest when the Target's own base came from a registry."""
    if overridden or not base.digest:
        return False
    digest = base.digest.split("@")[-1]
    if bundle.target.base_digest == digest:
        return False
    update_target(bundle, replace(bundle.target, base_digest=digest))
    return True


def plan_build(bundle: Bundle, base: str | None, say: Say, engine_name: str | None = None) -> Plan:
    asked_route()  # a mistyped BUNDLER_WHEELHOUSE_ROUTE is refused before anything else
    lock = fresh_lock(bundle)
    flavour = flavour_for(bundle)
    dockerfiles = render(bundle, flavour, base or default_base(bundle, flavour))
    engine = engines.connect(engine_name)
    base_image = engines.base_image(engine, dockerfiles.base, say=say)
    lock, notes = wheelbuild.prepare(lock, bundle, engine, base_image, say)  # pins without a wheel for the Target
    files = collect(bundle.root)
    if files.secrets:
        say(f"Left out of the build context as secrets ({len(files.secrets)}): {', '.join(files.secrets)}")
    labels = labels_for(bundle, dockerfiles.flavour, base_image, lock.sha256)
    wheel = projectwheel.project_wheel(bundle, files, engine, base_image, say) if bundle.install_project else None
    return Plan(bundle, lock, dockerfiles, engine, base_image, labels, files, notes, wheel)


def build_once(plan: Plan, work: Path, *, no_cache: bool = False, deps_reference: str | None = None, say: Say = print) -> Built:
    """The dependency image (reused or made), the project image on it, its checks; the image is removed on failure."""
    engine, bundle = plan.engine, plan.bundle
    deps = dependency_image(
        engine, bundle, plan.lock, plan.dockerfiles, plan.base_image, work, no_cache=no_cache, reference=deps_reference, say=say
    )
    wheel = plan.project_wheel
    dockerfile = plan.dockerfiles.final_text(deps.reference, plan.labels, projectwheel.install_step() if wheel else "")
    context = write_project_context(bundle, dockerfile, plan.files, work / "project.tar", wheel)
    sent = context_checks(context.path)
    say(
        f"Build context: {context.bytes / 1e6:.2f} MB (project {plan.files.included_bytes / 1e6:.2f} MB in {len(plan.files.included)} "
        f"files; {plan.files.ignored_count} files ignored). Building the {plan.dockerfiles.flavour} image for "
        f"{bundle.target.describe()} on {plan.dockerfiles.base}, offline."
    )
    with Progress() as progress:
        image_id = run_engine_build(engine, context, progress, no_cache=no_cache)
    try:
        project = project_checks(engine, image_id, pins_sha256(plan.lock), sent)
    except BaseException:
        remove_image(engine, image_id)
        raise
    verdict = Verdict.of(deps.verdict)
    smoke = {
        "ok": True,
        "torch": verdict.torch,
        "imports": verdict.imports,
        "dependencies": {"reused": deps.reused} | deps.verdict,
        "project": project,
    }
    return Built(image_id, deps, context.bytes, dockerfile, smoke)


def run_build(
    bundle: Bundle,
    *,
    tag: str | None = None,
    base: str | None = None,
    export: Path | None = None,
    push: str | None = None,
    strict: bool = False,
    no_cache: bool = False,
    check_reproducible: bool = False,
    engine: str | None = None,
    say: Say = lambda text: None,
) -> BuildResult:
    started = time.monotonic()
    for flag, reference in (("--tag", tag), ("--push", push)):  # a bad --tag or --push is refused before anything is built
        if reference:
            handoff.split_reference(reference, flag)
    plan = plan_build(bundle, base, say, engine)
    notes = ([plan.base_image.note] if plan.base_image.note else []) + plan.notes
    tag = tag or default_tag(bundle, plan.lock.sha256)
    repository, version = handoff.split_reference(tag, "--tag")
    with tempfile.TemporaryDirectory(prefix="bundler-context-") as work:
        built = build_once(plan, Path(work), no_cache=no_cache, say=say)
        notes += built.deps.notes
        try:
            report = size_report(plan.engine, built.image_id, bundle.size_budget_mb)
            warning = enforce(report, strict, str(bundle.path))
            reproducible = check_twice(plan, built, Path(work), notes, say) if check_reproducible else None
        except BaseException:
            remove_image(plan.engine, built.image_id)
            raise
    if warning:
        notes.append(warning)
    plan.engine.tag(built.image_id, repository, version)
    if record_base_digest(bundle, plan.base_image, overridden=base is not None):
        notes.append(f"bundle.toml [target] base_digest set to {plan.base_image.digest.split('@')[-1]}")
    result = BuildResult(f"{repository}:{version}", built, plan, report, notes, reproducible=reproducible)
    result.commands = run_commands(result.tag, bundle.target.backend, plan.engine.name)
    if reproducible and not reproducible["reproducible"]:
        raise FindingsError(
            "the image is not reproducible: two cold builds of the same inputs differ"
            + (f" in {reproducible['first_difference']}" if reproducible["first_difference"] else "")
            + (f"; labels differ: {', '.join(reproducible['labels_differing'])}" if reproducible["labels_differing"] else "")
            + f". The first build is tagged {result.tag}.",
            hint="A step writes the clock or the build's own state into a file: normalize it (a fixed file time, "
            "SOURCE_DATE_EPOCH) or leave it out of the image.",
            value=reproducible["first_difference"],
            result=result.as_dict() | {"ok": False},
        )
    if export is not None:
        result.export = handoff.export(plan.engine, built.image_id, Path(export), names=[result.tag], say=say).as_dict()
    if push:
        result.push = handoff.push(plan.engine, built.image_id, push, keep_tag=push == result.tag, say=say).as_dict()
    result.seconds = time.monotonic() - started
    return result


def check_twice(plan: Plan, first: Built, work: Path, notes: list[str], say: Say) -> dict:
    """Build everything again, cold, under temporary names; compare; remove the second build."""
    say("Checking reproducibility: building everything a second time without any cache…")
    suffix = secrets.token_hex(4)
    reference = f"{CHECK_REPOSITORY}:deps-{first.deps.key[:12]}-{suffix}"
    second = build_once(plan, work, no_cache=True, deps_reference=reference, say=say)
    notes += [f"second build: {note}" for note in second.deps.notes]
    try:
        say("Comparing the two builds layer by layer…")
        return compare(plan.engine, first.image_id, second.image_id).as_dict()
    finally:  # an engine that dates images by their inputs (Podman) may give the second build the first one's ID
        if second.image_id != first.image_id:
            remove_image(plan.engine, second.image_id)
        if second.deps.image_id != first.deps.image_id:
            remove_image(plan.engine, reference)
        else:
            untag(plan.engine, reference)
