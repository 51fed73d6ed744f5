"""`bundler build` on the real engine: the CPU example with real torch, CUDA/ROCm from the fake index.

The CPU image (real torch 2.13.0+cpu) is built once per session and reused; CUDA and
ROCm projects are locked once against the tiny fake index and copied per test.
"""

from __future__ import annotations

import errno
import hashlib
import io
import json
import os
import shutil
import tarfile
from pathlib import Path

import pytest

from bundler.errors import BuildError
from bundler.lock.run import run_lock
from bundler.target.bundle import load_bundle
from tests.conftest import run_cli, scaffold_project
from tests.fakeindex import real_torch_index
from tests.registry import running_registry

pytestmark = [pytest.mark.docker]
OCI = (
    "org.opencontainers.image.revision",
    "org.opencontainers.image.created",
    "org.opencontainers.image.source",
    "org.opencontainers.image.version",
)
BUNDLER_LABELS = ("io.bundler.target", "io.bundler.lock.sha256", "io.bundler.base.digest", "io.bundler.version")
SECRETS = {
    ".env": "API_TOKEN=sk-live-4242-secret\n",
    "keys/id_ed25519": "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n",
    ".netrc": "machine example.org login me password hunter2-secret\n",
}


def build(project: Path, *args: str, env: dict | None = None):
    result = run_cli("build", str(project), *args, "--json", env=env)
    data = json.loads(result.stdout) if result.stdout.strip().startswith("{") else {}
    return result, data


def remove_tag(client, tag):
    import docker.errors

    try:
        client.images.remove(tag, noprune=True)
    except docker.errors.APIError:
        pass


def run_container(client, image, command, timeout=300):
    container = client.containers.run(image, command, network_mode="none", detach=True)
    try:
        code = container.wait(timeout=timeout)["StatusCode"]
        return code, container.logs().decode(errors="replace"), container
    except BaseException:
        container.remove(force=True)
        raise


@pytest.fixture(scope="session")
def session_env(tmp_path_factory):
    patch = pytest.MonkeyPatch()
    patch.setenv("BUNDLER_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "bundler-cache"))
    yield patch
    patch.undo()


# ----- the CPU example with real torch: built once ----------------------------------------
@pytest.fixture(scope="session")
def cpu_image(tmp_path_factory, docker_client, debian_python_image, session_env, cpu_torch_wheel):
    root = tmp_path_factory.mktemp("cpu")
    index = real_torch_index(root / "torchindex", cpu_torch_wheel)
    session_env.setenv("BUNDLER_INDEX_MAP", f"https://download.pytorch.org/whl={index}")
    project = scaffold_project(root / "example")
    run_lock(load_bundle(project), cpu=True)
    tag = "bundler-test/example-cpu:session"
    result, data = build(project, "--base", debian_python_image, "--tag", tag)
    assert result.returncode == 0, result.stderr[-3000:]
    yield project, data, tag
    remove_tag(docker_client, tag)


@pytest.mark.slow
def test_cpu_example_runs_its_pilot_in_the_container_offline(cpu_image, docker_client):
    project, data, tag = cpu_image
    code, logs, container = run_container(docker_client, tag, ["pilot", "--run-id", "in-container"])
    try:
        assert code == 0, logs
        stream, _ = container.get_archive("/opt/bundle/project/runs/in-container/summary.json")
        summary = json.load(tarfile.open(fileobj=io.BytesIO(b"".join(stream))).extractfile("summary.json"))
    finally:
        container.remove(force=True)
    assert summary["accepted"] + summary["rejected"] == 12
    assert data["smoke_test"]["ok"] and data["smoke_test"]["torch"]["version"] == "2.13.0+cpu"
    assert data["smoke_test"]["torch"]["cuda"] is None


@pytest.mark.slow
def test_cpu_image_labels_user_diagnostics_and_size(cpu_image, docker_client, debian_python_image):
    project, data, tag = cpu_image
    image = docker_client.images.get(tag)
    labels = image.labels
    assert all(labels.get(key) for key in OCI + BUNDLER_LABELS), labels
    base = docker_client.images.get(debian_python_image)
    assert labels["io.bundler.base.digest"] == base.id and labels["io.bundler.base.kind"] == "local-image-id"
    assert labels["io.bundler.lock.sha256"] == hashlib.sha256((project / "requirements-rebuild.txt").read_bytes()).hexdigest()
    assert image.attrs["Config"]["User"] == "10001:10001"
    code, logs, container = run_container(
        docker_client, tag, ["sh", "-c", "id -u; du -sb /opt/venv/lib/python3.11/site-packages; ls /opt/bundle/diagnostics/run.py"]
    )
    container.remove(force=True)
    assert code == 0, logs
    uid, site, diagnostics = logs.split("\n")[:3]
    assert uid == "10001" and diagnostics == "/opt/bundle/diagnostics/run.py"
    site_bytes = int(site.split()[0])
    size = data["size"]
    assert size["total_bytes"] == image.attrs["Size"]
    assert size["total_bytes"] <= 1.05 * (base.attrs["Size"] + site_bytes)
    assert len(size["largest_layers"]) == 5 and "/opt/venv" in size["largest_layers"][0]["instruction"]
    assert "wheel" not in " ".join(layer["instruction"] for layer in size["largest_layers"])


@pytest.mark.slow
def test_cpu_image_is_pushed_to_and_pulled_from_a_real_registry(cpu_image, docker_client, tmp_path):
    project, data, tag = cpu_image
    with running_registry(tmp_path / "registry") as address:
        reference = f"{address}/team/example:1"
        result, pushed = build(project, "--base", data["base_image"], "--tag", tag, "--push", reference)
        assert result.returncode == 0, result.stderr[-3000:]
        assert pushed["push"]["reference"] == reference and pushed["push"]["digest"].startswith("sha256:")
        image_id = docker_client.images.get(reference).id
        remove_tag(docker_client, reference)
        pulled = docker_client.images.pull(f"{address}/team/example", tag="1")
        assert pulled.id == image_id
        remove_tag(docker_client, reference)


# ----- CUDA and ROCm from the fake index ---------------------------------------------------
@pytest.fixture(scope="session")
def locked_fakes(tmp_path_factory, fake_index, session_env):
    session_env.setenv("BUNDLER_PIP_RETRIES", "0")
    root = tmp_path_factory.mktemp("fakes")
    projects = {}
    for backend, accelerator in (("cuda", "12.8"), ("rocm", "6.4")):
        project = scaffold_project(root / backend, backend=backend, accelerator=accelerator, torch_version="2.9.1", python_version="3.11")
        patch = pytest.MonkeyPatch()
        patch.setenv("BUNDLER_INDEX_MAP", fake_index.index_map())
        try:
            run_lock(load_bundle(project))
        finally:
            patch.undo()
        projects[backend] = project
    return projects, {"BUNDLER_INDEX_MAP": fake_index.index_map(), "BUNDLER_PIP_RETRIES": "0"}


@pytest.fixture
def fake_project(locked_fakes, tmp_path):
    projects, env = locked_fakes

    def copy(backend: str) -> Path:
        return Path(shutil.copytree(projects[backend], tmp_path / backend))

    return copy, env


SECRET_BYTES = (b"sk-live-4242-secret", b"hunter2-secret", b"b3BlbnNzaC1rZXktdjEAAAAA")


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


@pytest.mark.parametrize("backend", ["cuda", "rocm"])
def test_fake_gpu_targets_build_with_layer_order_labels_user_and_no_secrets(
    backend, fake_project, docker_client, debian_python_image, tmp_path
):
    copy, env = fake_project
    project = copy(backend)
    for relative, text in SECRETS.items():
        (project / relative).parent.mkdir(parents=True, exist_ok=True)
        (project / relative).write_text(text)
    tag = f"bundler-test/fake-{backend}:1"
    archive = tmp_path / "image.tar"
    result, data = build(project, "--base", debian_python_image, "--tag", tag, "--export", str(archive), env=env)
    try:
        assert result.returncode == 0, result.stderr[-3000:]
        assert sorted(data["secrets_excluded"]) == sorted(SECRETS)
        assert all(secret in result.stderr for secret in SECRETS)  # listed in the build output
        assert data["flavour"] == "runtime" and data["smoke_test"]["ok"]
        expected = {"cuda": ("12.8", None), "rocm": (None, "6.4.43482")}[backend]
        assert (data["smoke_test"]["torch"]["cuda"], data["smoke_test"]["torch"]["hip"]) == expected
        image = docker_client.images.get(tag)
        assert json.loads(image.labels["io.bundler.target.json"])["backend"] == backend
        assert image.attrs["Config"]["User"] == "10001:10001"
        steps = [entry["CreatedBy"] for entry in reversed(docker_client.api.history(image.id))]
        position = [
            next(i for i, step in enumerate(steps) if marker in step)
            for marker in (
                "groupadd",
                " in /opt/venv",
                " in /opt/bundle/ ",
                " in /opt/bundle/project/ ",
                " in /opt/bundle/project/config/ ",
            )
        ]
        assert position == sorted(position), steps
        # the export: whole, hashed, with the command to load it
        assert data["export"]["sha256"] == hashlib.sha256(archive.read_bytes()).hexdigest()
        assert (tmp_path / "image.tar.sha256").read_text() == f"{data['export']['sha256']}  image.tar\n"
        assert "docker load -i image.tar" in result.stderr and not (tmp_path / "image.tar.partial").exists()
        # no secret in any layer, by name or by content
        scanned, found = secrets_in_saved_image(archive)
        assert scanned >= 5 and found == []
    finally:
        remove_tag(docker_client, tag)


def test_a_code_change_rebuilds_only_the_code_and_config_layers(fake_project, docker_client, debian_python_image):
    copy, env = fake_project
    project = copy("cuda")
    tag = "bundler-test/fake-rebuild:1"
    try:
        first, before = build(project, "--base", debian_python_image, "--tag", tag, env=env)
        assert first.returncode == 0, first.stderr[-3000:]
        old = list(reversed(docker_client.api.history(before["image_id"])))
        model = next((project / "src").rglob("model.py"))
        model.write_text(model.read_text() + "\n# a code-only change\n")
        second, after = build(project, "--base", debian_python_image, "--tag", tag, env=env)
        assert second.returncode == 0, second.stderr[-3000:]
        assert after["context"]["deps_reused"] and after["context"]["deps_context_bytes"] == 0
        new = list(reversed(docker_client.api.history(after["image_id"])))
        assert len(old) == len(new)
        rebuilt = [entry["CreatedBy"] for a, entry in zip(old, new, strict=False) if a["Id"] != entry["Id"]]
        assert rebuilt and " in /opt/bundle/project/ " in rebuilt[0], rebuilt
        assert all("/opt/bundle/project" in step or "LABEL" in step for step in rebuilt), rebuilt
        kept = [entry["CreatedBy"] for a, entry in zip(old, new, strict=False) if a["Id"] == entry["Id"]]
        assert any(" in /opt/venv" in step for step in kept) and any("groupadd" in step for step in kept)
    finally:
        remove_tag(docker_client, tag)


def test_a_tampered_cached_wheel_fails_the_build_naming_it(fake_project, docker_client, debian_python_image):
    copy, env = fake_project
    project = copy("rocm")
    tag = "bundler-test/fake-tampered:1"
    first, data = build(project, "--base", debian_python_image, "--tag", tag, env=env)
    assert first.returncode == 0, first.stderr[-3000:]
    remove_tag(docker_client, tag)
    if data["context"]["deps_reused"]:  # an earlier run left the dependency image: build it from the wheels once
        remove_tag(docker_client, data["context"]["deps_image"])
        again, data = build(project, "--base", debian_python_image, "--tag", tag, env=env)
        assert again.returncode == 0 and not data["context"]["deps_reused"], again.stderr[-3000:]
        remove_tag(docker_client, tag)
    remove_tag(docker_client, data["context"]["deps_image"])  # force the wheels to be used again
    cache = Path(os.environ["BUNDLER_CACHE_DIR"]) / "wheels" / "sha256"
    victim = next(cache.rglob("torch-2.9.1+rocm6.4-cp311-*.whl"))
    original = victim.read_bytes()
    victim.write_bytes(original + b"\0")
    try:
        result, failed = build(project, "--base", debian_python_image, "--tag", tag, env=env)
    finally:
        victim.write_bytes(original)
    assert result.returncode == 8, result.stderr
    assert str(victim) in result.stderr and failed["error"]["path"] == str(victim)
    assert not docker_client.images.list(name="bundler-test/fake-tampered")


# ----- bad input -------------------------------------------------------------------------
def test_no_engine_with_a_fresh_lock(fake_project):
    copy, env = fake_project
    result = run_cli("build", str(copy("cuda")), env={**env, "DOCKER_HOST": "unix:///nonexistent/docker.sock"})
    assert result.returncode == 7, result.stderr
    assert "no Docker engine answers at unix:///nonexistent/docker.sock" in result.stderr and "dockerd" in result.stderr


def test_missing_or_stale_lock_asks_for_bundler_lock(fake_project):
    copy, env = fake_project
    project = copy("cuda")
    (project / "requirements.in").write_text((project / "requirements.in").read_text() + "numpy\n")
    result = run_cli("build", str(project), env=env)
    assert result.returncode == 6 and "stale" in result.stderr and "bundler lock" in result.stderr
    (project / "requirements-rebuild.txt").unlink()
    result = run_cli("build", str(project), env=env)
    assert result.returncode == 6 and "missing" in result.stderr and "bundler lock" in result.stderr


def test_base_image_neither_local_nor_pullable(fake_project, docker_client):
    copy, env = fake_project
    result = run_cli("build", str(copy("cuda")), "--base", "bundler-test/no-such-base:1", env=env)
    assert result.returncode == 9, result.stderr
    assert "bundler-test/no-such-base:1 is not on this engine and cannot be pulled" in result.stderr


def test_devel_flavour_with_an_unknown_devel_base(fake_project):
    copy, env = fake_project
    project = copy("cuda")
    with open(project / "bundle.toml", "a") as handle:
        handle.write('\n[[extensions]]\nname = "fused-op"\nmodule = "fused_op"\ncompile = true\n')
    result = run_cli("build", str(project), "--base", "bundler-test/bookworm-python3.11:1", env=env)
    assert result.returncode == 8, result.stderr
    assert "devel" in result.stderr and "nvidia/cuda" in result.stderr and "Traceback" not in result.stderr


def test_over_budget_with_strict_fails_and_tags_nothing(fake_project, docker_client, debian_python_image):
    copy, env = fake_project
    project = copy("cuda")
    toml = project / "bundle.toml"
    toml.write_text(toml.read_text().replace("size_budget_mb = 3000", "size_budget_mb = 1"))
    result = run_cli("build", str(project), "--base", debian_python_image, "--tag", "bundler-test/fake-strict:1", "--strict", env=env)
    assert result.returncode == 8 and "over the size budget of 1 MB" in result.stderr, result.stderr
    assert not docker_client.images.list(name="bundler-test/fake-strict")


def test_a_registry_that_refuses_the_push(fake_project, docker_client, debian_python_image, tmp_path):
    copy, env = fake_project
    tag = "bundler-test/fake-refused:1"
    with running_registry(tmp_path / "ro", read_only=True) as address:
        reference = f"{address}/team/refused:1"
        result = run_cli("build", str(copy("cuda")), "--base", debian_python_image, "--tag", tag, "--push", reference, env=env)
    try:
        assert result.returncode == 8, result.stderr
        assert f"pushing {reference} failed" in result.stderr
        assert not docker_client.images.list(name=f"{address}/team/refused")  # the push tag was taken back
    finally:
        remove_tag(docker_client, tag)


def test_disk_full_during_export_leaves_no_partial_file(docker_client, debian_python_image, tmp_path):
    from bundler.image.handoff import export

    class FullDisk(io.BufferedWriter):
        written = 0

        def write(self, data):
            FullDisk.written += len(data)
            if FullDisk.written > 8 << 20:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            return super().write(data)

    def opener(path, mode):
        return FullDisk(io.FileIO(path, mode))

    dest = tmp_path / "image.tar"
    with pytest.raises(BuildError, match="the disk is full") as caught:
        export(docker_client, debian_python_image, dest, opener=opener)
    assert "No partial file" in caught.value.message
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_the_layer_scan_finds_a_planted_secret(tmp_path):
    """Positive control of secrets_in_saved_image: a layer holding .env is reported."""
    layer = io.BytesIO()
    with tarfile.open(fileobj=layer, mode="w") as tar:
        for name, data in ((".env", b"x"), ("app/notes.txt", b"token sk-live-4242-secret")):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    archive = tmp_path / "saved.tar"
    with tarfile.open(archive, "w") as outer:
        for name, data in (("abc/layer.tar", layer.getvalue()), ("manifest.json", json.dumps([{"Layers": ["abc/layer.tar"]}]).encode())):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            outer.addfile(info, io.BytesIO(data))
    assert secrets_in_saved_image(archive) == (1, ["abc/layer.tar: .env", "abc/layer.tar: app/notes.txt (content)"])
