"""aarch64 (GH200/GB200) Targets from this x86-64 host: pip-tools in an emulated arm64 image
gives the same pins and hashes as uv on the host; an amd64 image is refused for an aarch64
Target instead of resolving for the wrong machine. No wheel is downloaded (PyPI metadata)."""

from __future__ import annotations

import pytest

from bundler.errors import LockError
from bundler.lock.lockfile import parse_pins, split_lock
from bundler.lock.run import run_lock
from bundler.target.bundle import load_bundle
from tests import dockerenv
from tests.lock_support import aarch64_emulated, arm64_base_image, make_project

pytestmark = [pytest.mark.docker, pytest.mark.slow]
FLAGS = {"cuda": "13.0", "torch": "2.13.0", "torch_index": "pypi", "platform": "linux/aarch64"}


@pytest.fixture(scope="module")
def arm64_image(docker_client) -> str:
    if not aarch64_emulated():
        message = "this kernel does not run aarch64 binaries (apt-get install qemu-user-static binfmt-support; binfmt_misc mounted)"
        if dockerenv.in_ci():
            pytest.fail(message)
        pytest.skip(message)
    return arm64_base_image(docker_client)


def pins_of(project) -> dict[str, tuple[str, tuple[str, ...]]]:
    text = (project / "requirements-rebuild.txt").read_text()
    return {pin.name: (pin.version, pin.hashes) for pin in parse_pins(split_lock(text)[1])}


def test_pip_tools_in_an_emulated_arm64_image_and_uv_on_the_host_give_the_same_aarch64_lock(tmp_path, arm64_image):
    emulated = make_project(tmp_path / "pip-tools", "torch\ntorchvision\n", base_image=arm64_image)
    result = run_lock(load_bundle(emulated), **FLAGS)
    assert result.resolution.where == f"container {arm64_image}"
    host = make_project(tmp_path / "uv", "torch\ntorchvision\n")
    run_lock(load_bundle(host), resolver="uv", **FLAGS)
    assert pins_of(emulated) == pins_of(host)
    assert any(name.startswith("nvidia-") for name in pins_of(emulated))  # PyPI's aarch64 torch 2.13 is a CUDA 13.0 build
    assert (
        f"# resolver: pip-tools {result.resolution.resolver.split()[-1]} in a container {arm64_image} for linux_aarch64"
        in (emulated / "requirements-rebuild.txt").read_text()
    )


def test_an_amd64_image_is_refused_for_an_aarch64_target(tmp_path, debian_python_image):
    project = make_project(tmp_path / "p", "torch\n", base_image=debian_python_image)
    with pytest.raises(LockError, match="is amd64, but the Target is linux_aarch64") as caught:
        run_lock(load_bundle(project), **FLAGS)
    assert "--resolver uv" in caught.value.hint
    assert not (project / "requirements-rebuild.txt").exists()
