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
   (lockfile.verify_lock_command: pip install --no-index of the lock finds everything
   installed, pip check, torch imported and its build compared with the Target);
7. the size report against ``size_budget_mb`` (``--strict`` fails above it);
8. the tag, then ``--export`` and ``--push``.
A failure in 5-7 removes the new image, so no tag ever names a half-checked image.

Smoke test and the fake wheels of the tests: the tiny torch wheels of tests/fakeindex.py
answer ``torch.__version__`` and ``torch.version.cuda/hip`` like the real ones, so the
smoke test runs unchanged on them: it checks the installed build, not the GPU (that is
`bundler diagnose --image`'s device stage). GPU flags (bundler.diagnose.device_flags)
are given to the smoke container only when the host has a GPU of the Target's backend.
"""

from __future__ import annotations

import datetime
import hashlib
import os
import re
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from bundler import __version__
from bundler.bundle import Bundle, update_target
from bundler.context import ContextTar, ProjectFiles, collect
from bundler.dockerfile import DockerfilePlan, default_base, flavour_for, render
from bundler.errors import BuildError, LockError
from bundler.fsutil import sha256_file
from bundler.imagereport import SizeReport, enforce, size_report
from bundler.lockfile import lock_state, requirements_body, split_lock

IMAGE_PROJECT = "/opt/bundle/project"
IMAGE_PYTHON = "/opt/venv/bin/python"
SMOKE_TIMEOUT_S = 600
LABEL_PREFIX = "io.bundler"
DEPS_REPOSITORY = "bundler/deps"
DEPS_LABEL = f"{LABEL_PREFIX}.deps.key"


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

    def as_dict(self) -> dict:
        return {
            "ok": True, "tag": self.tag, "image_id": self.image_id, "flavour": self.flavour, "base_image": self.base,
            "base_recorded": self.base_recorded, "labels": self.labels, "size": self.size.as_dict(),
            "context": {"bytes": self.context_bytes, "wheelhouse_bytes": self.wheelhouse_bytes, "project_bytes": self.project_bytes,
                        "deps_context_bytes": self.deps.get("deps_context_bytes", 0), "deps_image": self.deps.get("deps_image"),
                        "deps_reused": self.deps.get("deps_reused")},
            "secrets_excluded": self.secrets_excluded, "smoke_test": self.smoke, "notes": self.notes,
            "export": self.export, "push": self.push, "seconds": round(self.seconds, 1),
        }


# ----- preconditions ------------------------------------------------------------------
def require_fresh_lock(bundle: Bundle) -> None:
    state = lock_state(bundle)
    if not state.ok:
        raise LockError(
            f"the lock {state.path} is {state.status}: {state.detail}",
            hint="Run `bundler lock` in the project, then build again (the image installs exactly the lock).",
            path=state.path,
            value=state.status,
        )


def default_tag(bundle: Bundle, lock_sha: str) -> str:
    from bundler.compat import build_name

    name = re.sub(r"[^a-z0-9._-]+", "-", bundle.name.lower()).strip("-._") or bundle.package
    return f"bundler/{name}:{build_name(bundle.target.backend, bundle.target.accelerator)}-{lock_sha[:12]}"


# ----- labels -------------------------------------------------------------------------
def _git(root: Path, *args: str) -> str:
    try:
        completed = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return completed.stdout.strip() if completed.returncode == 0 else ""


def created_time(root: Path) -> str:
    """SOURCE_DATE_EPOCH, else the commit time, else now (UTC, RFC 3339)."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH", "").strip()
    if not epoch.isdigit():
        epoch = _git(root, "log", "-1", "--format=%ct")
    moment = datetime.datetime.fromtimestamp(int(epoch), datetime.timezone.utc) if epoch.isdigit() else datetime.datetime.now(datetime.timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def labels_for(bundle: Bundle, plan: DockerfilePlan, base, lock_sha: str) -> dict:
    import json

    from bundler.lockfile import target_fields

    root = bundle.root
    revision = _git(root, "rev-parse", "HEAD") or "unknown"
    return {
        "org.opencontainers.image.title": bundle.name,
        "org.opencontainers.image.created": created_time(root),
        "org.opencontainers.image.revision": revision,
        "org.opencontainers.image.source": _git(root, "config", "--get", "remote.origin.url") or "unknown",
        "org.opencontainers.image.version": _git(root, "describe", "--tags", "--always", "--dirty") or "unversioned",
        "org.opencontainers.image.base.name": base.reference,
        "org.opencontainers.image.base.digest": base.digest.split("@")[-1] if base.digest else base.image_id,
        f"{LABEL_PREFIX}.version": __version__,
        f"{LABEL_PREFIX}.target": bundle.target.describe(),
        f"{LABEL_PREFIX}.target.json": json.dumps(target_fields(bundle.target), sort_keys=True),
        f"{LABEL_PREFIX}.lock.sha256": lock_sha,
        f"{LABEL_PREFIX}.base.image": base.reference,
        f"{LABEL_PREFIX}.base.digest": base.recorded,
        f"{LABEL_PREFIX}.base.kind": "registry-digest" if base.digest else "local-image-id",
        f"{LABEL_PREFIX}.flavour": plan.flavour,
        f"{LABEL_PREFIX}.entry": bundle.entry,
    }


# ----- the build contexts -------------------------------------------------------------
@dataclass
class Context:
    path: Path
    bytes: int


def deps_key(plan: DockerfilePlan, base_image_id: str, install_body: str) -> str:
    """What the dependency image depends on: its Dockerfile, the base image and the lock's pins."""
    payload = "\0".join((plan.deps_text, base_image_id, install_body))
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def install_requirements(bundle: Bundle) -> str:
    _, body = split_lock(bundle.lock_path.read_text(encoding="utf-8"))
    return requirements_body(body)


def write_deps_context(plan: DockerfilePlan, install_body: str, wheels: list, dest: Path) -> Context:
    with open(dest, "wb") as handle:
        tar = ContextTar(handle)
        tar.add_bytes("Dockerfile", plan.deps_text.encode("utf-8"))
        tar.add_bytes("lock/requirements.txt", install_body.encode("utf-8"))
        for wheel in wheels:
            tar.add_file(f"wheels/{wheel.filename}", wheel.path)
        return Context(dest, tar.close())


def write_project_context(bundle: Bundle, dockerfile: str, files: ProjectFiles, dest: Path) -> Context:
    """Dockerfile, bundler's entry point and diagnostics, the project's code, its config last."""
    from bundler.diagnose import diagnostics_folder
    from bundler.resources import resource_path

    diagnostics = diagnostics_folder(bundle.root)
    own_diagnostics = diagnostics.resolve() == (bundle.root / "diagnostics").resolve()
    code = [r for r in files.included if not r.startswith("config/") and not (own_diagnostics and r.startswith("diagnostics/"))]
    config = [r for r in files.included if r.startswith("config/")]
    with open(dest, "wb") as handle:
        tar = ContextTar(handle)
        tar.add_bytes("Dockerfile", dockerfile.encode("utf-8"))
        tar.add_file("bundle/entrypoint.sh", resource_path("images") / "entrypoint.sh")
        if own_diagnostics:
            tar.add_tree("bundle/diagnostics", bundle.root / "diagnostics", [r[len("diagnostics/"):] for r in files.included if r.startswith("diagnostics/")])
        else:
            shipped = sorted(p.relative_to(diagnostics).as_posix() for p in diagnostics.rglob("*")
                             if p.is_file() and "__pycache__" not in p.parts and p.suffix not in (".pyc", ".pyo"))
            tar.add_tree("bundle/diagnostics", diagnostics, shipped)
        tar.add_tree("project", bundle.root, code)
        if not config:
            tar.add_bytes("config/.keep", b"")
        for relative in config:
            tar.add_file(relative, bundle.root / relative)
        return Context(dest, tar.close())


# ----- engine steps -------------------------------------------------------------------
def run_engine_build(engine, context: Context, network: bool, labels: dict, progress, no_cache: bool = False) -> str:
    """Send the context, stream the engine's output into ``progress``; the new image ID."""
    import docker.errors

    image_id, log = None, []
    try:
        with open(context.path, "rb") as handle:
            stream = engine.api.build(
                fileobj=handle, custom_context=True, rm=True, forcerm=True, pull=False, decode=True, labels=labels, nocache=no_cache,
                network_mode=None if network else "none",
            )
            for event in stream:
                if "error" in event or "errorDetail" in event:
                    message = event.get("error") or event["errorDetail"].get("message", "")
                    raise BuildError(
                        f"the image build failed: {message.strip()[:600]}\nLast build output:\n  " + "\n  ".join(log[-12:]),
                        hint="Read the step above; a wheel that does not install for the Target's Python or platform means the lock "
                        "and the base image disagree (`bundler lock` for this Target, or --base with the Target's Python).",
                        value=message.strip()[:200],
                    )
                text = event.get("stream", "")
                if text:
                    for line in text.rstrip("\n").splitlines():
                        if line.strip():
                            log.append(line.rstrip())
                            progress.line(line.rstrip())
                    found = re.search(r"Successfully built ([0-9a-f]{12,64})", text)
                    if found:
                        image_id = found.group(1)
                aux = event.get("aux") or {}
                if aux.get("ID"):
                    image_id = aux["ID"]
    except docker.errors.APIError as error:
        raise BuildError(f"the engine refused the build: {(error.explanation or str(error))[:500]}.",
                         hint="Check the engine's log (`journalctl -u docker`) and the disk space of its data root.") from None
    if image_id is None:
        raise BuildError("the engine finished the build without an image ID.\nLast build output:\n  " + "\n  ".join(log[-12:]),
                         hint="Run the build again; if it repeats, check the engine's log.")
    return engine.images.get(image_id).id


def smoke_test(engine, image_id: str, bundle: Bundle, say=lambda text: None) -> dict:
    """Verify the lock in place and the torch build inside the new image (no network)."""
    from bundler.engine import gpu_run_options
    from bundler.lockfile import verify_lock_command

    lock_in_image = f"{IMAGE_PROJECT}/{bundle.lock}"
    command = verify_lock_command(lock_in_image, bundle.target, IMAGE_PYTHON, ("--no-index", "--disable-pip-version-check"))
    options, notes, gpu = gpu_run_options(bundle.target.backend)
    if not gpu:
        options = {}
    container = engine.containers.create(image_id, ["/bin/sh", "-c", command], network_mode="none", **options)
    try:
        container.start()
        code = int(container.wait(timeout=SMOKE_TIMEOUT_S).get("StatusCode", 1))
        output = container.logs().decode("utf-8", errors="replace")
    finally:
        container.remove(force=True)
    torch_line = next((line for line in reversed(output.strip().splitlines()) if line.startswith("{")), "")
    result = {"ok": code == 0, "exit_code": code, "gpu_flags": gpu, "notes": notes if gpu else [], "command": command}
    if torch_line:
        import json

        try:
            result.update(json.loads(torch_line))
        except ValueError:
            pass
    if code != 0:
        tail = "\n  ".join(output.strip().splitlines()[-10:])
        raise BuildError(
            f"the smoke test in the new image failed (exit {code}); the image was removed and nothing tagged:\n  {tail}",
            hint="The installed packages differ from the lock or torch is not the Target's build: check the lock was made for this "
            "Target (`bundler lock`) and the base image's Python is the Target's.",
            value=code,
        )
    return result


def _image_exists(engine, reference: str) -> bool:
    import docker.errors

    try:
        engine.images.get(reference)
        return True
    except docker.errors.ImageNotFound:
        return False


def remove_image(engine, image_id: str) -> None:
    import docker.errors

    try:
        engine.api.remove_image(image_id, force=True, noprune=True)
    except docker.errors.APIError:
        pass


def record_base_digest(bundle: Bundle, base, overridden: bool) -> bool:
    """Fill bundle.toml's base_digest when the Target's own base came from a registry."""
    from dataclasses import replace

    if overridden or not base.digest:
        return False
    digest = base.digest.split("@")[-1]
    if bundle.target.base_digest == digest:
        return False
    update_target(bundle, replace(bundle.target, base_digest=digest))
    return True


# ----- orchestration ------------------------------------------------------------------
class Progress:
    """Build output for people: step lines and a bar on stderr (quiet with a non-terminal)."""

    def __init__(self, say) -> None:
        self.say = say
        self._bar = None
        self._task = None

    def __enter__(self):
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress as RichProgress, SpinnerColumn, TextColumn, TimeElapsedColumn

        console = Console(stderr=True, highlight=False, soft_wrap=True)
        self._bar = RichProgress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                                 console=console, transient=True)
        self._bar.__enter__()
        self._task = self._bar.add_task("building", total=None)
        return self

    def __exit__(self, *exc):
        self._bar.__exit__(*exc)

    def line(self, text: str) -> None:
        step = re.match(r"Step (\d+)/(\d+) : (.*)", text)
        if step:
            self._bar.update(self._task, completed=int(step.group(1)) - 1, total=int(step.group(2)), description=step.group(3)[:60])
            self._bar.console.print(text, markup=False, highlight=False)
        elif text.startswith((" ---> Using cache", "Successfully")):
            self._bar.console.print(text, markup=False, highlight=False)


def run_build(bundle: Bundle, *, tag: str | None = None, base: str | None = None, export: Path | None = None,
              push: str | None = None, strict: bool = False, no_cache: bool = False, say=lambda text: None) -> BuildResult:
    import time

    from bundler import engine as engines
    from bundler import handoff, wheelhouse

    started = time.monotonic()
    require_fresh_lock(bundle)
    lock_sha = sha256_file(bundle.lock_path)
    flavour = flavour_for(bundle)
    plan = render(bundle, flavour, base or default_base(bundle, flavour))
    engine = engines.client()
    base_image = engines.base_image(engine, plan.base, say=say)
    notes = [base_image.note] if base_image.note else []
    tag = tag or default_tag(bundle, lock_sha)
    handoff.split_reference(tag)  # a bad --tag is refused before the build
    if push:
        handoff.split_reference(push)

    files = collect(bundle.root)
    if files.secrets:
        say(f"Left out of the build context as secrets ({len(files.secrets)}): {', '.join(files.secrets)}")
    install_body = install_requirements(bundle)
    key = deps_key(plan, base_image.image_id, install_body)
    deps_image = f"{DEPS_REPOSITORY}:{key[:24]}"
    labels = labels_for(bundle, plan, base_image, lock_sha)
    sent = {"deps_context_bytes": 0, "wheelhouse_bytes": 0, "deps_image": deps_image, "deps_reused": True}
    with tempfile.TemporaryDirectory(prefix="bundler-context-") as work:
        if no_cache or not _image_exists(engine, deps_image):
            sent["deps_reused"] = False
            sources = {extension.name for extension in bundle.extensions if extension.compile}
            wheels = wheelhouse.gather(bundle.lock_path, bundle.target, sources=sources, say=say)
            context = write_deps_context(plan, install_body, wheels, Path(work) / "deps.tar")
            sent.update(deps_context_bytes=context.bytes, wheelhouse_bytes=sum(w.size for w in wheels))
            say(f"Dependency image {deps_image}: context {context.bytes / 1e6:.1f} MB (wheelhouse {sent['wheelhouse_bytes'] / 1e6:.1f} MB "
                f"in {len(wheels)} files); installing offline with --require-hashes…")
            with Progress(say) as progress:
                deps_id = run_engine_build(engine, context, plan.network, {DEPS_LABEL: key, f"{LABEL_PREFIX}.lock.sha256": lock_sha}, progress, no_cache)
            repository, version = deps_image.rsplit(":", 1)
            engine.api.tag(deps_id, repository, version)
        else:
            say(f"Dependency image {deps_image} is up to date (same base image and lock): no wheel is sent.")
        context = write_project_context(bundle, plan.final_text(deps_image, labels), files, Path(work) / "project.tar")
        say(f"Build context: {context.bytes / 1e6:.2f} MB (project {files.included_bytes / 1e6:.2f} MB in {len(files.included)} files; "
            f"{files.ignored_count} files ignored).")
        say(f"Building the {plan.flavour} image for {bundle.target.describe()} on {plan.base}"
            + (" (offline)." if not plan.network else " (the system layer uses the distribution's mirror)."))
        with Progress(say) as progress:
            image_id = run_engine_build(engine, context, plan.network, {}, progress, no_cache)
    try:
        say("Smoke test in the new image: the lock in place, pip check, the torch build…")
        smoke = smoke_test(engine, image_id, bundle, say=say)
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
        tag=f"{repository}:{version}", image_id=image_id, flavour=plan.flavour, base=plan.base, base_recorded=base_image.recorded,
        labels=labels, size=report, context_bytes=context.bytes + sent["deps_context_bytes"], wheelhouse_bytes=sent["wheelhouse_bytes"],
        project_bytes=files.included_bytes, secrets_excluded=files.secrets, smoke=smoke, notes=notes,
        dockerfile=plan.final_text(deps_image, labels), deps=sent,
    )
    if export is not None:
        result.export = handoff.export(engine, image_id, Path(export), names=[result.tag], say=say).as_dict()
    if push:
        result.push = handoff.push(engine, image_id, push, keep_tag=push == result.tag, say=say).as_dict()
    result.seconds = time.monotonic() - started
    return result
