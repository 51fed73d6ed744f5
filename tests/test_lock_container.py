"""Cross-resolution: a Python 3.13 Target locked from this 3.11 host runs pip-compile in the target image."""

from __future__ import annotations

import sys

import pytest

from bundler.lock.lockfile import bundle_lock, parse_pins, split_lock
from bundler.lock.run import run_lock
from bundler.target.bundle import load_bundle
from tests.lock_support import make_project

pytestmark = [pytest.mark.docker, pytest.mark.slow]


@pytest.mark.skipif(sys.version_info[:2] == (3, 13), reason="needs a host whose Python is not the Target's 3.13")
def test_python_313_target_resolves_in_the_trixie_image(tmp_path, indexed, debian_python_image_factory):
    image = debian_python_image_factory("trixie")
    project = make_project(tmp_path / "p", "torch==2.9.1\ntorchvision\nnumpy\n", python="3.13", base_image=image)
    result = run_lock(load_bundle(project), cuda="12.8")
    assert result.resolution.where == f"container {image}"
    text = (project / "requirements-rebuild.txt").read_text()
    pins = {pin.name: pin for pin in parse_pins(split_lock(text)[1])}
    assert pins["torch"].version == "2.9.1+cu128"
    assert indexed.file_hash("torch-2.9.1+cu128-cp313-cp313-manylinux_2_28_x86_64.whl") in pins["torch"].hashes
    # resolved for 3.13, not for the host: torch's `setuptools; python_version >= "3.12"` is in
    assert "setuptools" in pins and "nvidia-cuda-runtime-cu12" in pins
    assert "file://" not in text and str(indexed.root) not in text
    assert "# target: torch 2.9.1 for cuda 12.8 on Python 3.13 (linux_x86_64)" in text
    assert bundle_lock(load_bundle(project)).state.status == "fresh"
    # warm: nothing changed -> no container, no resolution
    assert run_lock(load_bundle(project)).action == "unchanged"
    # a real re-resolution reuses the cached pip-tools venv in the cache volume
    again = run_lock(load_bundle(project), upgrade=True)
    assert again.action == "written" and again.resolution.where == f"container {image}"


@pytest.mark.skipif(sys.version_info[:2] == (3, 13), reason="needs a host whose Python is not the Target's 3.13")
def test_lock_engine_podman_resolves_in_the_target_image_on_podman(
    tmp_path, indexed, podman, docker_engine, debian_python_image_factory, monkeypatch
):
    """`bundler lock --engine podman`: the same resolution in the Target's image, run by Podman."""
    from tests import podmanenv

    image = debian_python_image_factory("trixie")
    podmanenv.load_from_docker(podman.engine, docker_engine, image)
    for key, value in podman.env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("DOCKER_HOST", raising=False)
    project = make_project(tmp_path / "p", "torch==2.9.1\nnumpy\n", python="3.13", base_image=image)
    result = run_lock(load_bundle(project), cuda="12.8", engine="podman")
    assert result.resolution.where == f"container {image}"
    pins = {pin.name: pin for pin in parse_pins(split_lock((project / "requirements-rebuild.txt").read_text())[1])}
    assert pins["torch"].version == "2.9.1+cu128" and "setuptools" in pins  # torch's `python_version >= "3.12"` dependency
    assert indexed.file_hash("torch-2.9.1+cu128-cp313-cp313-manylinux_2_28_x86_64.whl") in pins["torch"].hashes
    assert bundle_lock(load_bundle(project)).state.status == "fresh"
