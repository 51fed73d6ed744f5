"""The real CUDA image: PyPI's CUDA build of torch 2.9.1 (cu128) locked from PyPI and built here.

One session-scoped build serves every assertion: the lock from PyPI's metadata, ~4 GB
of wheels downloaded into an empty cache of its own, the dependency image made over
loopback and checked (torch.version.cuda, every shared library resolving, libcudart,
libcublas and libcudnn loading without a driver), the project image on top. Without a
GPU, `docker run IMAGE diagnose` must stop at the device stage and say how to pass one.
The images (several GB) and the cache are removed when the session ends.
"""

from __future__ import annotations

import json
import shutil

import pytest

from bundler.lock.run import run_lock
from bundler.target.bundle import load_bundle
from tests.build_support import build, build_fresh, remove_built, run_container
from tests.conftest import scaffold_project

pytestmark = [pytest.mark.docker, pytest.mark.slow]
DEVICE_STAGE_EXIT = 14  # 10 + the device stage's number (README's exit codes)


@pytest.fixture(scope="session")
def cuda_image(tmp_path_factory, docker_client, docker_engine, debian_python_image):
    root = tmp_path_factory.mktemp("cuda")
    cache = root / "cache"  # empty: CI builds this image from nothing
    patch = pytest.MonkeyPatch()
    patch.setenv("BUNDLER_CACHE_DIR", str(cache))
    project = scaffold_project(root / "example", backend="cuda", accelerator="12.8", torch_version="2.9.1", python_version="3.11")
    tag, made = "bundler-test/example-cuda:session", []
    try:
        run_lock(load_bundle(project), cuda="12.8", torch="2.9.1", torch_index="pypi")
        result, data = build_fresh(docker_engine, project, "--base", debian_python_image, "--tag", tag)
        made.append(data)
        assert result.returncode == 0, result.stderr[-3000:]
        yield project, data, tag, made
    finally:
        for built in reversed(made):
            remove_built(docker_engine, built)
        patch.undo()
        shutil.rmtree(cache, ignore_errors=True)


def verdict(docker_client, tag: str) -> dict:
    labels = docker_client.images.get(tag).labels
    return {check["name"]: check["finding"] for check in json.loads(labels["io.bundler.deps.verdict"])["checks"]}


def test_the_image_holds_pypis_cuda_build_and_every_library_resolves_and_loads(cuda_image, docker_client):
    project, data, tag, _ = cuda_image
    assert data["smoke_test"]["torch"]["cuda"] == "12.8" and data["smoke_test"]["torch"]["version"] == "2.9.1+cu128"
    findings = verdict(docker_client, tag)
    libraries = findings["shared libraries"]
    assert libraries["libraries"] > 50 and libraries["unresolved"] == {} and libraries["load_failures"] == {}
    assert [name.split(".so")[0] for name in libraries["loaded"]] == ["libcudart", "libcublas", "libcudnn"]
    # the wheels came over loopback: the context held a Dockerfile, no layer holds a wheel
    context = data["context"]
    assert context["route"] == "loopback" and context["served_bytes"] == context["wheelhouse_bytes"] > 3e9
    assert context["deps_context_bytes"] < 20_000
    assert len(docker_client.images.get(tag).attrs["RootFS"]["Layers"]) == 6


def test_diagnose_without_a_gpu_stops_at_the_device_stage_with_the_hint(cuda_image, docker_client):
    _, _, tag, _ = cuda_image
    code, logs, container = run_container(docker_client, tag, ["diagnose"])
    container.remove(force=True)
    assert code == DEVICE_STAGE_EXIT, logs[-3000:]
    assert "--gpus all" in logs and "device" in logs


def test_size_against_base_and_site_packages(cuda_image, docker_client, debian_python_image):
    _, data, tag, _ = cuda_image
    out = docker_client.containers.run(tag, ["du", "-sb", "/opt/venv/lib/python3.11/site-packages"], remove=True, network_mode="none")
    floor = docker_client.images.get(debian_python_image).attrs["Size"] + int(out.split()[0])
    assert data["size"]["total_bytes"] <= 1.05 * floor


def test_a_second_project_with_the_same_lock_downloads_sends_and_checks_nothing(cuda_image, docker_client, debian_python_image):
    project, data, _, made = cuda_image
    twin = shutil.copytree(project, project.parent / "twin", ignore=shutil.ignore_patterns("runs"))
    (twin / "bundle.toml").write_text((twin / "bundle.toml").read_text().replace('name = "Example"', 'name = "Twin"'))
    result, other = build(twin, "--base", debian_python_image, "--tag", "bundler-test/example-cuda:twin")
    made.append({"tag": other.get("tag")})
    assert result.returncode == 0, result.stderr[-3000:]
    assert other["context"]["deps_image"] == data["context"]["deps_image"] and other["context"]["deps_reused"]
    assert other["context"]["served_bytes"] == 0 and other["smoke_test"]["dependencies"]["reused"]
    assert "Downloading" not in result.stderr
