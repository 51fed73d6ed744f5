"""`bundler build` on the real engine with CUDA/ROCm projects locked against the fake index.

The projects are locked once per session and copied per test; their dependency images
(a few MB of tiny wheels on the Debian base) are made once and reused, as a user's are.
The CPU example with real torch is in test_build_cpu.py, the real CUDA build in
test_build_cuda.py, reproducibility in test_build_reproducible.py.
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
from bundler.image.checks import Check, run_dependency_checks
from tests.build_support import SECRETS, build, layer_names, locked_fake_projects, remove_built, remove_tag, secrets_in_saved_image
from tests.conftest import run_cli
from tests.registry import running_registry

pytestmark = [pytest.mark.docker]


@pytest.fixture(scope="session")
def locked_fakes(tmp_path_factory, fake_index):
    projects = locked_fake_projects(tmp_path_factory.mktemp("fakes"), fake_index)
    made: dict = {}  # (engine name, dependency image) -> the engine
    yield projects, {"BUNDLER_INDEX_MAP": fake_index.index_map(), "BUNDLER_PIP_RETRIES": "0"}, made
    for (_, reference), engine in sorted(made.items(), key=lambda item: item[0]):  # the dependency images these tests made
        remove_tag(engine, reference)


@pytest.fixture
def fake_project(locked_fakes, tmp_path, docker_engine):
    projects, env, made = locked_fakes

    def copy(backend: str, name: str | None = None) -> Path:
        return Path(shutil.copytree(projects[backend], tmp_path / (name or backend)))

    def built(data: dict, on=None) -> dict:
        if (data.get("context") or {}).get("deps_image"):
            engine = on.engine if on else docker_engine
            made[(engine.name, data["context"]["deps_image"])] = engine
        return data

    copy.env, copy.built = env, built
    return copy


@pytest.mark.parametrize(("backend", "engine_name"), [("cuda", "docker"), ("rocm", "docker"), ("cuda", "podman")])
def test_fake_gpu_targets_build_with_layer_order_labels_user_and_no_secrets(backend, engine_name, engines, fake_project, tmp_path):
    on = engines(engine_name)
    project = fake_project(backend)
    for relative, text in SECRETS.items():
        (project / relative).parent.mkdir(parents=True, exist_ok=True)
        (project / relative).write_text(text)
    tag = f"bundler-test/fake-{backend}:1"
    archive = tmp_path / "my image.tar"  # a name the printed command must quote
    result, data = build(project, "--base", on.base, "--tag", tag, "--export", str(archive), env=fake_project.env, engine=on)
    fake_project.built(data, on)
    try:
        assert result.returncode == 0, result.stderr[-3000:]
        assert sorted(data["secrets_excluded"]) == sorted(SECRETS)
        assert all(secret in result.stderr for secret in SECRETS)  # listed in the build output
        assert data["flavour"] == "runtime" and data["smoke_test"]["ok"]
        expected = {"cuda": ("12.8", None), "rocm": (None, "6.4.43482")}[backend]
        assert (data["smoke_test"]["torch"]["cuda"], data["smoke_test"]["torch"]["hip"]) == expected
        image = on.engine.image(tag)
        assert json.loads(image.labels["io.bundler.target.json"])["backend"] == backend
        assert image.user == "10001:10001"
        verdict = json.loads(image.labels["io.bundler.deps.verdict"])
        assert verdict["ok"] and [check["name"] for check in verdict["checks"]] == ["torch build", "shared libraries", "imports"]
        # layers: base, user, environment, then bundler's files, code, config; no wheel in any of bundler's
        names = layer_names(on.engine, tag)
        assert len(names) == 6, list(names)
        assert "etc/passwd" in names["1"] and "opt/venv/bin/python" in names["2"]
        assert "opt/bundle/entrypoint.sh" in names["3"] and "opt/bundle/diagnostics/run.py" in names["3"]
        assert "opt/bundle/project/bundle.toml" in names["4"] and "opt/bundle/project/config/pilot.json" in names["5"]
        assert not [name for position, layer in names.items() if position != "0" for name in layer if name.endswith(".whl")]
        # the export: whole, hashed, with the command to load it
        assert data["export"]["sha256"] == hashlib.sha256(archive.read_bytes()).hexdigest()
        assert (tmp_path / "my image.tar.sha256").read_text() == f"{data['export']['sha256']}  my image.tar\n"
        assert "sha256sum -c 'my image.tar.sha256' && docker load -i 'my image.tar'" in result.stderr
        assert not (tmp_path / "my image.tar.partial").exists()
        scanned, found = secrets_in_saved_image(archive)
        assert scanned == 6 and found == []
    finally:
        remove_tag(on.engine, tag)


def test_a_code_change_rebuilds_one_layer_and_a_second_project_reuses_the_checked_dependencies(fake_project, any_engine):
    project, on = fake_project("cuda"), any_engine
    tag, other = "bundler-test/fake-rebuild:1", "bundler-test/fake-second:1"
    before: dict = {}
    try:
        first, before = build(project, "--base", on.base, "--tag", tag, env=fake_project.env, engine=on)
        assert first.returncode == 0, first.stderr[-3000:]
        fake_project.built(before, on)
        model = next((project / "src").rglob("model.py"))
        model.write_text(model.read_text() + "\n# a code-only change\n")
        second, after = build(project, "--base", on.base, "--tag", tag, env=fake_project.env, engine=on)
        assert second.returncode == 0, second.stderr[-3000:]
        assert after["context"]["deps_reused"] and after["context"]["deps_context_bytes"] == 0 and after["context"]["served_bytes"] == 0
        assert after["smoke_test"]["dependencies"]["reused"] and "checked when that image was made" in second.stderr
        old = on.engine.image(before["image_id"]).layers
        new = on.engine.image(after["image_id"]).layers
        # only the code layer changed: the config layer was rebuilt but holds the same bytes
        assert [i for i, (a, b) in enumerate(zip(old, new, strict=True)) if a != b] == [4]
        # a second project with the same lock: same dependency image, nothing checked again
        twin = fake_project("cuda", name="twin")
        (twin / "bundle.toml").write_text((twin / "bundle.toml").read_text().replace('name = "Cuda"', 'name = "Twin"'))
        third, data = build(twin, "--base", on.base, "--tag", other, env=fake_project.env, engine=on)
        assert third.returncode == 0, third.stderr[-3000:]
        assert data["context"]["deps_image"] == after["context"]["deps_image"] and data["smoke_test"]["dependencies"]["reused"]
        assert on.engine.image(other).labels["org.opencontainers.image.title"] == "Twin"
    finally:
        remove_tag(on.engine, tag)
        remove_tag(on.engine, other)
        if before.get("image_id"):
            remove_tag(on.engine, before["image_id"])  # replaced by the rebuild: left untagged


def registry_blobs(folder: Path) -> set[str]:
    """The blobs a registry of tests/registry.py holds (layers, configs, manifests), by digest."""
    return {path.parent.name for path in (folder / "storage").rglob("blobs/sha256/*/*/data")}


def test_a_second_push_after_a_code_change_sends_one_layer(fake_project, any_engine, tmp_path):
    """On Docker and on Podman (which is told to reach a loopback registry over plain HTTP, as Docker does by itself)."""
    project, on = fake_project("cuda"), any_engine
    tag = f"bundler-test/fake-push-{on.name}:1"
    data: dict = {}
    with running_registry(tmp_path / "registry") as address:
        reference = f"{address}/team/pilot:1"  # not .../push: Podman's service routes /images/NAME/push on the first "/push"
        try:
            first, data = build(project, "--base", on.base, "--tag", tag, "--push", reference, env=fake_project.env, engine=on)
            assert first.returncode == 0, first.stderr[-3000:]
            fake_project.built(data, on)
            received = registry_blobs(tmp_path / "registry")
            assert len(received) == 8  # six layers, the image's config, its manifest
            model = next((project / "src").rglob("model.py"))
            model.write_text(model.read_text() + "\n# a code-only change\n")
            second, again = build(project, "--base", on.base, "--tag", tag, "--push", reference, env=fake_project.env, engine=on)
            assert second.returncode == 0, second.stderr[-3000:]
            assert len(registry_blobs(tmp_path / "registry") - received) == 3  # the code layer, a config, a manifest
            assert again["push"]["digest"].startswith("sha256:") and again["push"]["digest"] != data["push"]["digest"]
            if on.name == "docker":  # Podman's service reports no layer of a push, only its digest
                assert (data["push"]["layers_sent"], data["push"]["layers_present"]) == (6, 0)
                assert (again["push"]["layers_sent"], again["push"]["layers_present"]) == (1, 5)
                assert 0 < again["push"]["bytes_sent"] < data["push"]["bytes_sent"] / 100
            assert on.engine.pull(reference).id == again["image_id"]  # what the registry holds is the image built
        finally:
            remove_tag(on.engine, reference)
            remove_tag(on.engine, tag)
            if data.get("image_id"):
                remove_tag(on.engine, data["image_id"])  # replaced by the rebuild: left untagged


def test_a_tampered_cached_wheel_fails_the_build_naming_it(fake_project, docker_engine, debian_python_image):
    project = fake_project("rocm")
    tag = "bundler-test/fake-tampered:1"
    first, data = build(project, "--base", debian_python_image, "--tag", tag, env=fake_project.env)
    assert first.returncode == 0, first.stderr[-3000:]
    remove_built(docker_engine, data)  # no dependency image: the wheels are served again
    cache = Path(os.environ["BUNDLER_CACHE_DIR"]) / "wheels" / "sha256"
    victim = next(cache.rglob("torch-2.9.1+rocm6.4-cp311-*.whl"))
    original = victim.read_bytes()
    victim.write_bytes(original + b"\0")
    try:
        result, failed = build(project, "--base", debian_python_image, "--tag", tag, env=fake_project.env)
    finally:
        victim.write_bytes(original)
    assert result.returncode == 8, result.stderr
    assert str(victim) in result.stderr and failed["error"]["path"] == str(victim)
    assert not docker_engine.images(name="bundler-test/fake-tampered")
    assert not docker_engine.images(name=data["context"]["deps_image"])


def test_a_config_file_that_does_not_parse_fails_the_project_checks(fake_project, docker_engine, debian_python_image):
    project = fake_project("cuda")
    (project / "config" / "pilot.json").write_text('{"documents": 12,')
    result, data = build(project, "--base", debian_python_image, "--tag", "bundler-test/fake-config:1", env=fake_project.env)
    assert result.returncode == 8, result.stderr
    assert "config/pilot.json does not parse (JSONDecodeError" in result.stderr and data["error"]["kind"] == "build"
    assert not docker_engine.images(name="bundler-test/fake-config")


def test_a_failing_dependency_check_is_named(docker_engine, debian_python_image):
    checks = [
        Check("passes", ("python3.11", "-c", "print('{\"fine\": 1}')")),
        Check("libraries resolve", ("python3.11", "-c", "import sys; print('{\"unresolved\": 2}'); sys.exit(1)")),
    ]
    with pytest.raises(BuildError, match="failed its check 'libraries resolve'") as caught:
        run_dependency_checks(docker_engine, debian_python_image, checks, python="python3.11")
    assert '{"unresolved": 2}' in caught.value.message


# ----- bad input -------------------------------------------------------------------------
def test_no_engine_with_a_fresh_lock(fake_project):
    env = {**fake_project.env, "DOCKER_HOST": "unix:///nonexistent/docker.sock"}
    result = run_cli("build", str(fake_project("cuda")), env=env)
    assert result.returncode == 7, result.stderr
    assert "no Docker engine answers at unix:///nonexistent/docker.sock" in result.stderr and "dockerd" in result.stderr


def test_no_podman_service_names_the_socket_and_how_to_start_it(fake_project, tmp_path):
    socket, project = f"unix://{tmp_path}/podman.sock", fake_project("cuda")
    for args in (["--engine", "podman"], []):  # asked for, or found from CONTAINER_HOST
        result = run_cli("build", str(project), *args, "--json", env={**fake_project.env, "CONTAINER_HOST": socket})
        assert result.returncode == 7, result.stderr
        error = json.loads(result.stdout)["error"]
        assert error["kind"] == "engine" and error["value"] == socket
        assert f"no Podman engine answers at {socket}" in error["message"]
        assert f"podman system service --time=0 {socket} &" in error["hint"] and "Traceback" not in result.stderr


def test_an_unknown_engine_is_refused(fake_project):
    result = run_cli("build", str(fake_project("cuda")), "--engine", "containerd", env=fake_project.env)
    assert (
        result.returncode == 2
        and "--engine 'containerd' is not an engine bundler knows" in result.stderr
        and "docker, podman" in result.stderr
    )


def test_missing_or_stale_lock_asks_for_bundler_lock(fake_project):
    project = fake_project("cuda")
    (project / "requirements.in").write_text((project / "requirements.in").read_text() + "numpy\n")
    result = run_cli("build", str(project), env=fake_project.env)
    assert result.returncode == 6 and "stale" in result.stderr and "bundler lock" in result.stderr
    (project / "requirements-rebuild.txt").unlink()
    result = run_cli("build", str(project), env=fake_project.env)
    assert result.returncode == 6 and "missing" in result.stderr and "bundler lock" in result.stderr


def test_an_unknown_wheelhouse_route_is_refused_before_anything_is_built(fake_project, debian_python_image):
    env = {**fake_project.env, "BUNDLER_WHEELHOUSE_ROUTE": "carrier-pigeon"}
    result = run_cli("build", str(fake_project("cuda")), "--base", debian_python_image, env=env)
    assert result.returncode == 2, result.stderr
    assert "BUNDLER_WHEELHOUSE_ROUTE='carrier-pigeon'" in result.stderr and "loopback, context" in result.stderr
    assert "Step 1/" not in result.stderr


def test_base_image_neither_local_nor_pullable(fake_project):
    result = run_cli("build", str(fake_project("cuda")), "--base", "bundler-test/no-such-base:1", env=fake_project.env)
    assert result.returncode == 9, result.stderr
    assert "bundler-test/no-such-base:1 is not on this engine and cannot be pulled" in result.stderr


def test_devel_flavour_with_an_unknown_devel_base(fake_project):
    project = fake_project("cuda")
    with open(project / "bundle.toml", "a") as handle:
        handle.write('\n[[extensions]]\nname = "fused-op"\nmodule = "fused_op"\ncompile = true\n')
    result = run_cli("build", str(project), "--base", "bundler-test/bookworm-python3.11:1", env=fake_project.env)
    assert result.returncode == 8, result.stderr
    assert "devel" in result.stderr and "nvidia/cuda" in result.stderr and "Traceback" not in result.stderr


def test_over_budget_with_strict_fails_and_tags_nothing(fake_project, docker_engine, debian_python_image):
    project = fake_project("cuda")
    toml = project / "bundle.toml"
    toml.write_text(toml.read_text().replace("size_budget_mb = 3000", "size_budget_mb = 1"))
    result = run_cli(
        "build", str(project), "--base", debian_python_image, "--tag", "bundler-test/fake-strict:1", "--strict", env=fake_project.env
    )
    assert result.returncode == 8 and "over the size budget of 1 MB" in result.stderr, result.stderr
    assert not docker_engine.images(name="bundler-test/fake-strict")


def test_a_registry_that_refuses_the_push(fake_project, docker_engine, debian_python_image, tmp_path):
    tag = "bundler-test/fake-refused:1"
    with running_registry(tmp_path / "ro", read_only=True) as address:
        reference = f"{address}/team/refused:1"
        result = run_cli(
            "build", str(fake_project("cuda")), "--base", debian_python_image, "--tag", tag, "--push", reference, env=fake_project.env
        )
    try:
        assert result.returncode == 8, result.stderr
        assert f"pushing {reference} failed" in result.stderr
        assert not docker_engine.images(name=f"{address}/team/refused")  # the push tag was taken back
    finally:
        remove_tag(docker_engine, tag)


def test_disk_full_during_export_leaves_no_partial_file(docker_engine, debian_python_image, tmp_path):
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
        export(docker_engine, debian_python_image, dest, opener=opener)
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
