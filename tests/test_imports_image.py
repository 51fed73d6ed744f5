"""A green install whose dependency does not import fails the build: the project wheel below
imports like a wheel built for NumPy 1.x does under NumPy 2. Tiny wheels from the fake index
and the project's own folder, on the local Debian base image."""

from __future__ import annotations

import json
import uuid

import pytest

from bundler.lock.run import run_lock
from bundler.target.bundle import load_bundle
from tests.conftest import run_cli
from tests.deps_support import cpu_project, project_wheel

pytestmark = [pytest.mark.docker]
DTYPE = (
    "raise ValueError('numpy.dtype size changed, may indicate binary incompatibility. Expected 96 from C header, got 88 from PyObject')\n"
)


def test_a_dependency_that_does_not_import_fails_the_build_naming_module_error_and_hint(
    tmp_path, indexed, docker_client, debian_python_image
):
    project = cpu_project(tmp_path / "p", "torch\nnumpy\n./wheels/oldabi-1.2.2-py3-none-any.whl\n", base_image=debian_python_image)
    project_wheel(project / "wheels", "oldabi", "1.2.2", DTYPE)
    run_lock(load_bundle(project), cpu=True)
    tag = f"bundler-test/imports-{uuid.uuid4().hex[:8]}:1"
    done = run_cli("build", str(project), "--tag", tag, "--json")
    deps = [image for image in docker_client.images.list(name="bundler/deps") if any(t.endswith(_key(done)) for t in image.tags)]
    try:
        assert done.returncode == 8, done.stderr[-3000:]
        error = json.loads(done.stdout)["error"]
        assert "oldabi (oldabi 1.2.2): ValueError: numpy.dtype size changed" in error["message"]
        assert "pin `numpy<2`" in error["message"] and "newer release of oldabi" in error["message"]
        assert error["value"] == "oldabi"
        assert not docker_client.images.list(name=tag.split(":")[0]), "an image that failed its import check was tagged"
        assert not deps, "a dependency image that failed its checks was kept"
    finally:
        for image in deps:
            docker_client.images.remove(image.id, force=True)


def _key(done) -> str:
    line = next((text for text in done.stderr.splitlines() if text.startswith("Dependency image bundler/deps:")), "")
    return line.split("bundler/deps:")[1].split(":")[0].split()[0] if line else "no-deps-image"
