"""Shared helpers of the build tests: the CLI's JSON, images and containers, a layer scan, fake projects."""

from __future__ import annotations

import json
import shutil
import tarfile
from pathlib import Path

from tests.conftest import run_cli, scaffold_project
from tests.lock_support import lock_on_fake_index

OCI = (
    "org.opencontainers.image.revision",
    "org.opencontainers.image.created",
    "org.opencontainers.image.source",
    "org.opencontainers.image.version",
)
BUNDLER_LABELS = ("io.bundler.target", "io.bundler.lock.sha256", "io.bundler.base.digest", "io.bundler.version", "io.bundler.deps.verdict")
SECRETS = {
    ".env": "API_TOKEN=sk-live-4242-secret\n",
    "keys/id_ed25519": "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n",
    ".netrc": "machine example.org login me password hunter2-secret\n",
}
SECRET_BYTES = (b"sk-live-4242-secret", b"hunter2-secret", b"b3BlbnNzaC1rZXktdjEAAAAA")
FAKE_TARGETS = {"cuda": "12.8", "rocm": "6.4"}


def build(project: Path, *args: str, env: dict | None = None, engine=None):
    """`bundler build PROJECT ARGS --json` (on ``engine``, an EngineUnderTest, when given): (CompletedProcess, the JSON document or {})."""
    if engine is not None:
        args, env = (*args, *engine.args), {**(env or {}), **engine.env}
    result = run_cli("build", str(project), *args, "--json", env=env)
    data = json.loads(result.stdout) if result.stdout.strip().startswith("{") else {}
    return result, data


def build_fresh(engine, project: Path, *args: str, env: dict | None = None, cache: Path | None = None):
    """`build`, with its dependency image made by this build: one with the same key that an earlier
    run left in the engine (a killed session, another checkout) is removed and the build made
    again, since a reused dependency image skips what these tests look at (the route, the bytes
    served, the source builds). ``cache`` is emptied before that second build."""
    result, data = build(project, *args, env=env)
    if (data.get("context") or {}).get("deps_reused"):
        remove_built(engine, data)
        if cache is not None:
            shutil.rmtree(cache, ignore_errors=True)
        result, data = build(project, *args, env=env)
    return result, data


def remove_tag(engine, tag) -> None:
    """Untag (and remove when nothing else uses it) an image the tests made on bundler's ``engine``; never a forced removal."""
    from bundler.engine import EngineFailure

    try:
        engine.remove_image(tag)
    except EngineFailure:
        pass


def remove_built(engine, data: dict) -> None:
    """The image a build made, then its dependency image: what a test leaves behind."""
    for reference in (data.get("tag"), (data.get("context") or {}).get("deps_image")):
        if reference:
            remove_tag(engine, reference)


def run_container(client, image, command, timeout=300):
    container = client.containers.run(image, command, network_mode="none", detach=True)
    try:
        code = container.wait(timeout=timeout)["StatusCode"]
        return code, container.logs().decode(errors="replace"), container
    except BaseException:
        container.remove(force=True)
        raise


def layer_names(engine, image: str) -> dict[str, list[str]]:
    """{layer diff position: entry names} of every layer of a saved image (read as a stream from bundler's ``engine``)."""
    from bundler.image.reproducible import saved_layers

    layers, _ = saved_layers(engine, image)
    order = list(engine.image(image).layers)
    return {str(order.index(diff)): [name for name, _ in entries] for diff, entries in layers.items()}


def secrets_in_saved_image(archive: Path) -> tuple[int, list[str]]:
    """(layers scanned, 'layer: file' for each planted secret found by name or content) in a docker save tar."""
    found, scanned = [], 0
    with tarfile.open(archive) as outer:
        manifest = json.load(outer.extractfile("manifest.json"))
        for layer in manifest[0]["Layers"]:
            scanned += 1
            with tarfile.open(fileobj=outer.extractfile(layer)) as inner:
                for member in inner:
                    if member.name.rsplit("/", 1)[-1] in (".env", "id_ed25519", ".netrc"):
                        found.append(f"{layer}: {member.name}")
                    elif member.isreg() and member.size < 1 << 20:
                        data = inner.extractfile(member).read()
                        if any(secret in data for secret in SECRET_BYTES):
                            found.append(f"{layer}: {member.name} (content)")
    return scanned, found


def locked_fake_projects(root: Path, fake_index) -> dict[str, Path]:
    """A CUDA and a ROCm project locked once against the fake index (tiny wheels with PyTorch's names)."""
    projects = {}
    for backend, accelerator in FAKE_TARGETS.items():
        project = scaffold_project(root / backend, backend=backend, accelerator=accelerator, torch_version="2.9.1", python_version="3.11")
        projects[backend] = lock_on_fake_index(project, fake_index)
    return projects
