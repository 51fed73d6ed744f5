"""Resolution for the Target with pip-compile: on this host when it *is* the Target
(Linux, same architecture, same Python minor), otherwise inside the Target's base image.

pip-compile resolves for the interpreter and OS it runs on, so a host that differs from
the Target resolves in a container of the Target's image, with pip-tools installed there
from a wheelhouse fetched once. Before either, each index is probed, so that an
unreachable one is named instead of pip's "no matching version".
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from packaging.utils import canonicalize_name

from bundler.contracts.dropped import build_constraint_for
from bundler.contracts.lockformat import unhashed_pin
from bundler.errors import BundlerError, ExternalError, LockError
from bundler.lock.hashes import Pages, body_pages, hash_body, project_files, version_matches
from bundler.lock.pinfiles import check_exact_pins
from bundler.lock.piplog import metadata_failure, prepare_failure, resolution_error
from bundler.lock.requirements import REQUIREMENTS_IN, project_index
from bundler.lock.sources import admits_python, file_version
from bundler.lock.spec import LockSpec
from bundler.lock.staleness import stale_notes
from bundler.lock.torchbuild import MAX_ROUNDS, REASON, StandIns, remember, torch_build_failure, wanted_specifier
from bundler.lock.uvresolve import uv_argv, uv_environment, uv_version
from bundler.pipsettings import (
    PipSettings,
    cache_dir,
    container_pip,
    host_pip_settings,
    index_map,
    open_url,
    pip_environment,
    reachable_url,
)
from bundler.target.versions import DOCKER_ARCH

if TYPE_CHECKING:
    from bundler.engine import Engine

# pip 25.3 is the first whose resolver no longer downloads every chosen wheel once their
# metadata is known (PEP 658 or fast-deps): 4 GB for a CUDA torch before it.
PIP_FLOOR = "pip>=25.3"


@dataclass
class Resolution:
    body: str
    where: str  # "host" | "container <image>"
    seconds: float
    log: str
    resolver: str = ""  # "pip-tools 7.6.2" | "uv 0.13.9"
    notes: list[str] = field(default_factory=list)


def resolution_indexes(spec: LockSpec, settings: PipSettings, pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """(public URL, URL resolution reads) of each index of the lock, in pip's order."""
    indexes = [
        (public, reachable_url(public, pairs, settings, spec.build.pypi_index)) for public in [spec.index_url, *spec.extra_index_urls]
    ]
    return indexes + [(url, url) for url in settings.extra_index_urls]


def _compile_args(urls: list[str], settings: PipSettings, cache: str, verbose: bool = False) -> list[str]:
    # No --generate-hashes: pip-tools would download files to hash them (bundler/lock/hashes.py).
    # fast-deps reads a wheel's metadata by HTTP range requests where an index serves no
    # PEP 658 metadata, instead of downloading the wheel (900 MB for torch).
    pip_args = f"--retries {int(os.environ.get('BUNDLER_PIP_RETRIES', '5'))} --use-feature=fast-deps"
    args = [
        *(["-v"] if verbose else []),
        "--no-config",
        "--no-header",
        "--allow-unsafe",
        "--strip-extras",
        "--no-emit-index-url",
        "--no-emit-find-links",
        "--no-emit-trusted-host",
        "--no-emit-options",
        "--cache-dir",
        f"{cache}/pip-tools",
        "--pip-args",
        pip_args,
    ]
    return args + _index_args(urls, settings)


def _index_args(urls: list[str], settings: PipSettings) -> list[str]:
    """pip's options for these indexes, the first the main one, and the hosts the settings trust."""
    args = ["--index-url", urls[0], *[option for url in urls[1:] for option in ("--extra-index-url", url)]]
    return args + [option for host in settings.trusted_hosts for option in ("--trusted-host", host)]


def resolve(spec: LockSpec, previous_body: str | None, upgrade: bool, engine_name: str | None = None, say=None) -> Resolution:
    """Resolution for the Target, then the hashes from the indexes. When the previous lock's
    pins (kept as preferences) conflict with a tightened requirement, it runs again without them.
    ``engine_name`` (--engine) is the engine a resolution in the Target's image runs on."""
    early_notes: list[str] = []
    try:
        return _resolve(spec, previous_body, upgrade, engine_name, say or (lambda text: None), early_notes)
    except BundlerError as error:
        # said before resolving, they may be the cause (a project made for another torch), and the refusal is the paragraph read
        noted = list(dict.fromkeys(spec.requirements.overrides + early_notes))
        if noted and "Noted before resolving" not in error.message:
            error.message = error.message.rstrip(".") + ". Noted before resolving: " + "; ".join(n.rstrip(".") for n in noted) + "."
        if error.hint and not spec.lock_path.is_file():  # there is no previous lock to speak of
            error.hint = error.hint.replace(" The previous lock was not touched.", " Nothing was written.")
        raise


def _resolve(spec: LockSpec, previous_body: str | None, upgrade: bool, engine_name: str | None, say, early_notes: list[str]) -> Resolution:
    settings = host_pip_settings()
    pairs = index_map()
    indexes = resolution_indexes(spec, settings, pairs)
    probe_indexes(spec, settings, pairs)
    started = time.monotonic()
    early_notes += check_exact_pins(spec, say)
    kept_pins = bool(previous_body) and not upgrade
    with tempfile.TemporaryDirectory(prefix="bundler-project-wheels-") as local:
        # the project's own wheels, as an index of their own: resolved and hashed, never recorded
        urls = [url for _, url in indexes] + project_index(spec.requirements.project_wheels, Path(local))
        # archives whose build imports torch: resolved, never hashed
        stand_ins = StandIns(Path(local) / "stand-ins", probe=_torch_probe(spec, settings, pairs, indexes, engine_name, say))

        floor: list[str] = []  # releases no file of which admits the Target's Python, once a resolution picked one

        def attempt_with(kept: str | None, constraint: str = "") -> Attempt:
            return _resolve_standing_in(spec, settings, pairs, urls, kept, engine_name, stand_ins, indexes, constraint, floor)

        attempt = attempt_with(previous_body if kept_pins else None)
        notes, retried = list(early_notes), False
        if attempt.code != 0 and kept_pins and _conflict(attempt.log):
            notes.append(
                f"the previous lock's pins conflicted with {spec.bundle.requirements}, so everything was resolved again (as --upgrade does)"
            )
            kept_pins, retried = False, True
            attempt = attempt_with(None)
        if attempt.code != 0 and _unnamed_archive(spec, attempt.log):  # again with -v: pip then says which archive it was
            standing = [stand_ins.url] if stand_ins.archives else []
            attempt = _resolve_once(spec, settings, pairs, urls + standing, previous_body if kept_pins else None, engine_name, True)
        constraint = build_constraint_for(attempt.log) if attempt.code != 0 else ""
        if constraint:  # a setup older than the build tools pip installs for it: once more, with the release that still fits
            failed = attempt
            attempt = attempt_with(previous_body if kept_pins else None, constraint)
            if attempt.code == 0:
                notes.append(_constrained_note(failed.log, constraint))
        builder = _builder_for_lock(spec, engine_name, say) if attempt.code != 0 and _needs_system_packages(spec, attempt) else None
        if builder is not None:
            # a source archive's metadata step failed where the bundle's system packages may be missing (gdal-config): once
            # more where they are, the builder image `bundler build` compiles it in
            failed = attempt
            kept = previous_body if kept_pins else None
            attempt = _resolve_once(spec, settings, pairs, urls, kept, engine_name, constraint=constraint, floor=floor, image=builder)
            if attempt.code != 0 and not _archive_failed(attempt.log):
                attempt = failed  # it failed otherwise there: the host's own refusal is the one to read
        if attempt.code != 0:
            error = resolution_error(spec, attempt.log, attempt.where, indexes, kept_pins)
            if retried and isinstance(error, LockError):
                error.hint = (
                    "Loosen or fix the pins named above: resolving again without the current lock's pins, as `bundler lock --upgrade` "
                    "does, conflicts all the same. The previous lock was not touched."
                )
            raise error
        pages = body_pages(attempt.body, urls, settings)
        floor += python_floor(attempt.body, pages, spec.target.python)
        if floor:  # the host's Python is newer than the Target's X.Y.0, which `bundler build` downloads for
            attempt = attempt_with(previous_body if kept_pins else None, constraint)
            if attempt.code != 0:
                raise resolution_error(spec, attempt.log, attempt.where, indexes, kept_pins)
            notes.append(_floor_note(floor, spec.target.python))
            pages = body_pages(attempt.body, urls, settings)
        body = hash_body(attempt.body, urls, settings, pages)
        notes += stale_notes(attempt.body, spec, lambda name: [f for url in urls for f in pages.get((name, url), [])])
    remember({archive.sha256 for archive in stand_ins.archives.values()})
    notes += [
        f"{archive.name}=={archive.version}: {REASON}; its dependencies were read from its {archive.source}"
        for archive in stand_ins.archives.values()
    ]
    return Resolution(body, attempt.where, time.monotonic() - started, attempt.log, attempt.tool, notes)


def _resolve_standing_in(
    spec: LockSpec,
    settings: PipSettings,
    pairs: list[tuple[str, str]],
    urls: list[str],
    kept: str | None,
    engine_name: str | None,
    stand_ins: StandIns,
    indexes: list[tuple[str, str]],
    constraint: str = "",
    floor: list[str] | None = None,
) -> Attempt:
    """One resolution; each time it fails on a source archive whose build imports torch, that archive's
    dependencies (read from its metadata) stand in for it and it runs again. ``constraint``: a build constraint
    for every isolated build (``setuptools<82``); ``floor``: constraint lines that leave out releases the Target's
    Python cannot install."""
    floor = floor or []
    attempt = _resolve_once(
        spec, settings, pairs, urls + ([stand_ins.url] if stand_ins.archives else []), kept, engine_name, constraint=constraint, floor=floor
    )
    for _ in range(MAX_ROUNDS):
        failure = torch_build_failure(attempt.log) if attempt.code != 0 else None
        if failure is None:
            return attempt
        name, version = failure
        files = [item for _, url in indexes for item in _listed(url, name, settings)]
        stand_ins.add(name, version, files, wanted_specifier(name, spec.compiled_input), spec.target)
        attempt = _resolve_once(spec, settings, pairs, urls + [stand_ins.url], kept, engine_name, constraint=constraint, floor=floor)
    return attempt


PYTHON_FLOOR = "python-floor.txt"


def python_floor(body: str, pages: Pages, python: str) -> list[str]:
    """Constraint lines for each project of which the body pins a release that no file admits CPython ``python``.0 for
    (the host resolved on a newer micro release): every such release of that project left out."""
    files_of: dict[str, list] = {}
    for (name, _), files in pages.items():
        files_of.setdefault(name, []).extend(files)
    lines = []
    for pin in filter(None, map(unhashed_pin, body.splitlines())):
        listed = files_of.get(canonicalize_name(pin.name), [])
        pinned = [f for f in listed if version_matches(f.filename, pin.name, pin.version)]
        if not pinned or any(admits_python(f, python) for f in pinned):
            continue  # installable, or not listed at all (hash_body says so)
        versions = {f.filename: file_version(f.filename) for f in listed}
        admitted = {versions[f.filename] for f in listed if admits_python(f, python)}
        refused = sorted(v for v in set(versions.values()) - admitted if v is not None)
        lines.append(pin.name + ",".join(f"!={v}" for v in refused))
    return lines


def _floor_note(floor: list[str], python: str) -> str:
    names = ", ".join(line.split("!=")[0] for line in floor)
    return (
        f"{names}: the newest releases need a newer Python than {python}.0, which the image may hold (this host's is newer); "
        "the newest release whose files admit it was locked instead"
    )


BUILD_CONSTRAINTS = "build-constraints.txt"


def constrained_builds(folder: Path, constraint: str) -> dict[str, str]:
    """The environment that gives every isolated build of a resolution ``constraint`` ({} when there is none)."""
    if not constraint:
        return {}
    (folder / BUILD_CONSTRAINTS).write_text(constraint + "\n", encoding="utf-8")
    file = str(folder / BUILD_CONSTRAINTS)
    return {"PIP_BUILD_CONSTRAINT": file, "UV_BUILD_CONSTRAINT": file}


def _constrained_note(failed_log: str, constraint: str) -> str:
    found = prepare_failure(failed_log) or metadata_failure(failed_log)
    who = f"{found[0]}=={found[1]}" if found and found[0] and found[1] else (found[0] if found and found[0] else "a source archive")
    return (
        f"{who}'s setup imports a module only `{constraint}` still ships: its requirements were read with `{constraint}` in its "
        "isolated build environment, and `bundler build` builds it the same way"
    )


def _listed(url: str, name: str, settings: PipSettings) -> list:
    try:
        return project_files(url, name, settings)
    except (ExternalError, OSError, ValueError):
        return []


@dataclass(frozen=True)
class Attempt:
    """One run of a resolver: its exit code and log, where it ran, which resolver, the body it wrote ("" on failure)."""

    code: int
    log: str
    where: str
    tool: str = ""
    body: str = ""


def _conflict(log: str) -> bool:
    return "ResolutionImpossible" in log or "No solution found when resolving" in log


def _unnamed_archive(spec: LockSpec, log: str) -> bool:
    """Whether pip-compile failed on a source archive's metadata without naming it (pip-tools lets pip's traceback out)."""
    found = metadata_failure(log) if spec.resolver == "pip-tools" and not prepare_failure(log) else None
    return found is not None and not found[0]


def _resolve_once(
    spec: LockSpec,
    settings: PipSettings,
    pairs: list[tuple[str, str]],
    urls: list[str],
    kept: str | None,
    engine_name: str | None,
    verbose: bool = False,
    constraint: str = "",
    floor: list[str] | None = None,
    image: str | None = None,
) -> Attempt:
    """One resolution, on this host or in the Target's image (``image``: another one, the builder with the bundle's system
    packages); ``constraint`` constrains every isolated build's tools, ``floor`` (constraint lines) the releases it may pick."""
    with tempfile.TemporaryDirectory(prefix="bundler-lock-") as work:
        work_dir = Path(work)
        lines = list(spec.compiled_input)
        if floor:
            (work_dir / PYTHON_FLOOR).write_text("\n".join(floor) + "\n", encoding="utf-8")
            lines.append(f"-c {PYTHON_FLOOR}")
        (work_dir / REQUIREMENTS_IN).write_text("\n".join(lines) + "\n", encoding="utf-8")
        build_env = constrained_builds(work_dir, constraint)
        if kept:  # both resolvers keep an output file's pins that still fit
            (work_dir / "lock.txt").write_text(kept, encoding="utf-8")
        if spec.resolver == "uv":
            cache = str(cache_dir())
            argv = uv_argv(spec.target, urls, "lock.txt")
            completed = subprocess.run(argv, cwd=work_dir, env=uv_environment(settings, cache) | build_env, capture_output=True, text=True)
            attempt = Attempt(completed.returncode, completed.stdout + completed.stderr, "host", f"uv {uv_version()}")
        elif spec.host_mismatch or image:
            ran = _resolve_in_container(spec, settings, pairs, urls, work_dir, engine_name, verbose, bool(constraint), image)
            attempt = Attempt(ran.exit_code, ran.output, f"container {ran.image}", f"pip-tools {_piptools_version()}")
        else:
            cache = str(cache_dir())
            argv = [
                sys.executable,
                "-m",
                "piptools",
                "compile",
                *_compile_args(urls, settings, cache, verbose),
                "-o",
                "lock.txt",
                REQUIREMENTS_IN,
            ]
            env = pip_environment(settings, cache, settings.cert) | build_env
            completed = subprocess.run(argv, cwd=work_dir, env=env, capture_output=True, text=True)
            attempt = Attempt(completed.returncode, completed.stdout + completed.stderr, "host", f"pip-tools {_piptools_version()}")
        if attempt.code == 0:
            body = (work_dir / "lock.txt").read_text(encoding="utf-8")
            attempt = replace(attempt, body=re.sub(rf"(?m)^\s*#\s+(via )?-c {re.escape(PYTHON_FLOOR)}\n", "", body))
    return attempt


def _piptools_version() -> str:
    from importlib.metadata import version

    return version("pip-tools")


@dataclass(frozen=True)
class ContainerRun:
    """pip-compile in the Target's image: its exit code and output, and the image."""

    exit_code: int
    output: str
    image: str


def _resolve_in_container(
    spec: LockSpec,
    settings: PipSettings,
    pairs: list[tuple[str, str]],
    urls: list[str],
    work_dir: Path,
    engine_name: str | None,
    verbose: bool = False,
    constrained: bool = False,
    image: str | None = None,
) -> ContainerRun:
    from bundler.engine import Mount, RunSpec, base_image

    image = image or spec.target.base_image or spec.base_images["runtime"]
    client = _engine(spec, image, engine_name)
    image_id = base_image(client, image).image_id
    _check_architecture(client, image, spec.target.platform)
    volumes, env = _lock_volumes(spec, settings, pairs, urls)
    volumes[str(work_dir)] = {"bind": "/work", "mode": "rw"}
    if constrained:
        env["PIP_BUILD_CONSTRAINT"] = f"/work/{BUILD_CONSTRAINTS}"
    args = _compile_args(urls, settings, "/cache", verbose)
    venv = f"/cache/venv-pip25-py{spec.target.python}-{image_id.split(':')[-1][:12]}"
    script = "\n".join(
        [
            "set -e",
            f"PY=$(command -v python{spec.target.python} || true)",
            f'if [ -z "$PY" ]; then echo "bundler: the image has no python{spec.target.python} on PATH" >&2; exit 42; fi',
            f'if [ ! -f {venv}/.ready ]; then rm -rf {venv}; "$PY" -m venv {venv}; {venv}/bin/python -m pip install -q --no-index '
            f"--find-links /tools pip-tools '{PIP_FLOOR}'; touch {venv}/.ready; fi",
            "cd /work",
            f"{venv}/bin/python -m piptools compile {shlex.join(args)} -o lock.txt {REQUIREMENTS_IN}",
        ]
    )
    run = RunSpec(
        image,
        ["/bin/sh", "-c", script],
        mounts=[Mount(source, bind["bind"], bind["mode"] == "ro") for source, bind in volumes.items()],
        environment=env,
        working_dir="/work",
        user=f"{os.getuid()}:{os.getgid()}",
        network_mode="bridge",
        platform=f"linux/{DOCKER_ARCH[spec.target.platform]}",
    )
    ran = client.run(run)
    code, log = ran.exit_code, ran.output
    if code in (126, 127) or "exec format error" in log:
        raise LockError(
            f"this engine cannot run the {DOCKER_ARCH[spec.target.platform]} image {image} that resolution for "
            f"{spec.target.platform} needs: {log.strip()[-200:] or f'exit {code}'}",
            hint="Let the engine emulate it (Debian: apt-get install qemu-user-static binfmt-support), or resolve on this host with "
            "`bundler lock --resolver uv`.",
            value=image,
        )
    if code == 42:
        raise LockError(
            f"resolution must run in the target image {image}, but it has no python{spec.target.python}: {log.strip()[-200:]}",
            hint=f"Set [target] base_image to an image that has Python {spec.target.python} (e.g. "
            f"python:{spec.target.python}-slim-bookworm).",
            value=image,
        )
    return ContainerRun(code, log, image)


def _lock_volumes(spec: LockSpec, settings: PipSettings, pairs: list[tuple[str, str]], urls: list[str]) -> tuple[dict, dict[str, str]]:
    """What a lock container mounts (the cache at /cache, pip's wheels at /tools, local indexes at their own paths) and its pip settings."""
    cache = cache_dir()
    tools = _tools_wheelhouse(spec.target.python, cache)
    volumes = {
        str(cache / "container"): {"bind": "/cache", "mode": "rw"},
        str(tools): {"bind": "/tools", "mode": "ro"},
    }
    (cache / "container").mkdir(exist_ok=True)
    for _, local in pairs:
        if local.startswith("file://"):
            folder = Path(local[len("file://") :])
            volumes[str(folder)] = {"bind": str(folder), "mode": "ro"}  # same path: file:// URLs and links stay valid
    for shared in [url[len("file://") :] for url in urls if url.startswith("file://")] + spec.requirements.find_links:
        volumes.setdefault(shared, {"bind": shared, "mode": "ro"})  # the project's wheels and their index, at the same path
    for folder in sorted(_local_link_targets(pairs)):
        if not any(folder == Path(m) or Path(m) in folder.parents for m in volumes if volumes[m]["bind"] == m):
            volumes[str(folder)] = {"bind": str(folder), "mode": "ro"}
    env, cert_volumes = container_pip(settings, "/cache")
    volumes.update(cert_volumes)
    return volumes, env


def _needs_system_packages(spec: LockSpec, attempt: Attempt) -> bool:
    """Did a host resolution fail on a source archive's metadata step while the bundle declares system packages, which
    this host may lack and the builder image has?"""
    return bool(spec.bundle.system_packages) and attempt.where == "host" and spec.resolver == "pip-tools" and _archive_failed(attempt.log)


def _archive_failed(log: str) -> bool:
    return bool(prepare_failure(log) or metadata_failure(log))


def _builder_for_lock(spec: LockSpec, engine_name: str | None, say) -> str | None:
    """The builder image (the Target's base, compilers and the bundle's system packages) that resolution runs in; None
    when no engine or base image is here (the host's refusal then stands)."""
    from bundler import engine
    from bundler.engine import base_image
    from bundler.engine.builderimage import COMPILERS, builder_image, builder_tag

    image = spec.target.base_image or spec.base_images["runtime"]
    packages = sorted(set(COMPILERS["c"]) | set(spec.bundle.system_packages))
    try:
        client = engine.connect(engine_name, 600, why="a source archive's metadata needs the bundle's system packages", alternative="")
        base, python = base_image(client, image), f"python{spec.target.python}"
        builder_image(client, base, python, packages, say)
        return builder_tag(base, python, packages)[0]  # its name, which the lock's header records
    except BundlerError:
        return None


def _torch_probe(spec: LockSpec, settings: PipSettings, pairs: list[tuple[str, str]], indexes, engine_name: str | None, say) -> Callable:
    """StandIns' probe: an archive's metadata prepared with the Target's torch, in the Target's base image (torchprobe.py);
    None when no engine answers (static metadata is then all there is)."""
    from bundler.lock.torchprobe import ProbeSite, prepared_requirements

    sites: list[ProbeSite | None] = []  # made on the first archive; None when no engine or base image is here

    def site_for(name: str) -> ProbeSite | None:
        from bundler import engine
        from bundler.engine import base_image

        image = spec.target.base_image or spec.base_images["runtime"]
        try:
            client = engine.connect(engine_name, 600, why=f"{name}'s build imports torch", alternative="")
            base = base_image(client, image)
        except BundlerError:
            return None  # no engine, or the base image is not here: the archive's static metadata is all there is
        urls = [url for _, url in indexes]
        volumes, env = _lock_volumes(spec, settings, pairs, urls)
        pin = f"torch=={spec.pins.get('torch', spec.target.torch)}"
        return ProbeSite(
            client,
            image,
            base.image_id,
            spec.target.python,
            pin,
            _index_args(urls, settings),
            volumes,
            env,
            cache_dir() / "container",
            say=say,
            base=base,
            system_packages=tuple(spec.bundle.system_packages),
        )

    def probe(sdist: Path, sha256: str, name: str, version: str) -> list[str] | None:
        if not sites:
            sites.append(site_for(name))
        site = sites[0]
        return prepared_requirements(site, sdist, sha256, name, version, spec.target) if site else None

    return probe


def _check_architecture(client: Engine, image: str, platform: str) -> None:
    """pip-compile resolves for the machine it runs on: the image must be the Target's architecture."""
    described = client.image(image)
    found = described.architecture if described else ""
    if found and found != DOCKER_ARCH[platform]:
        raise LockError(
            f"the base image {image} is {found}, but the Target is {platform}: pip-compile in it would resolve for {found}.",
            hint=f"Set [target] base_image to a {DOCKER_ARCH[platform]} image with the Target's Python, or resolve on this host "
            "with `bundler lock --resolver uv`.",
            value=image,
        )


def _local_link_targets(pairs: list[tuple[str, str]]) -> set[Path]:
    """Folders holding the files a mapped local index links to (relative or file:// links)."""
    from urllib.parse import unquote, urlsplit

    folders = set()
    for _, local in pairs:
        if not local.startswith("file://"):
            continue
        for page in Path(local[len("file://") :]).rglob("index.html"):
            for href in re.findall(r'href="([^"#]+)', page.read_text(errors="replace")):
                if href.startswith("file://"):
                    folders.add(Path(unquote(urlsplit(href).path)).parent)
                elif "://" not in href:
                    folders.add((page.parent / unquote(href)).resolve().parent)
    return folders


def _engine(spec: LockSpec, image: str, engine_name: str | None) -> Engine:
    why = (
        f"{spec.host_mismatch}, and pip-compile resolves for the interpreter and OS it runs on, so resolution must "
        f"run inside the target image {image}"
    )
    from bundler import engine

    return engine.connect(engine_name, 600, why=why, alternative=f"Or lock on a Linux host with Python {spec.target.python}.")


def _tools_wheelhouse(python: str, cache: Path) -> Path:
    """Pure-Python wheels of pip-tools and its dependencies for the container, fetched once."""
    tools = cache / "tools" / f"pip-tools-{_piptools_version()}-pip25-py{python}"
    if (tools / ".ready").is_file():
        return tools
    tools.mkdir(parents=True, exist_ok=True)
    argv = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "-q",
        "--dest",
        str(tools),
        "--only-binary=:all:",
        "--python-version",
        python,
        "--implementation",
        "py",
        "--abi",
        "none",
        "--platform",
        "any",
        f"pip-tools=={_piptools_version()}",
        PIP_FLOOR,
    ]
    completed = subprocess.run(argv, capture_output=True, text=True)
    if completed.returncode != 0:
        raise ExternalError(
            f"could not fetch pip-tools wheels for Python {python} into {tools}: {completed.stderr.strip()[-300:]}",
            hint="The container installs pip-tools from this cache without network; let `pip download pip-tools` reach PyPI once, or fill "
            "the folder by hand.",
            path=tools,
        )
    (tools / ".ready").touch()
    return tools


def probe_indexes(spec: LockSpec, settings: PipSettings, pairs: list[tuple[str, str]]) -> None:
    """Fail early, and clearly, when an index cannot be reached (pip only says 'no version')."""
    import urllib.error

    for public, url in resolution_indexes(spec, settings, pairs):
        shown = url if url == public else f"{url} (standing for {public})"
        if url.startswith("file://"):
            if not Path(url[len("file://") :]).is_dir():
                raise ExternalError(
                    f"the index {shown} is not a folder on this host.",
                    hint="Fix BUNDLER_INDEX_MAP. The previous lock was not touched.",
                    value=url,
                )
            continue
        try:
            open_url(url.rstrip("/") + "/", settings, method="HEAD").close()
        except urllib.error.HTTPError:
            continue  # the server answered: reachable (some indexes refuse HEAD or the root page)
        except (urllib.error.URLError, OSError, ValueError) as error:
            reason = getattr(error, "reason", error)
            raise ExternalError(
                f"the index {shown} cannot be reached from this host ({reason}).",
                hint="Check the network, the proxy (PIP_PROXY / HTTPS_PROXY) and the CA bundle (PIP_CERT); "
                "BUNDLER_INDEX_MAP can point an index at a reachable mirror. The previous lock was not touched.",
                value=url,
            ) from None
