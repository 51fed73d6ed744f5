"""aarch64 (GH200/GB200) Targets from this x86-64 host: uv resolves for the platform on the
host, and pip-tools refuses an amd64 image for an aarch64 Target instead of resolving for the
wrong machine. No wheel is downloaded (PyPI metadata).

That pip-tools in an emulated arm64 image gives the same pins and hashes as uv is shown by
`bench/bench_lock.py --aarch64-image TAG` (docs/benchmarks.md): the arm64 base image alone
takes about 11 minutes to debootstrap under emulation, more than the suite can spend."""

from __future__ import annotations

import pytest

from bundler.errors import LockError
from bundler.lock.lockfile import parse_pins, split_lock
from bundler.lock.run import run_lock
from bundler.target.bundle import load_bundle
from tests.lock_support import make_project

pytestmark = [pytest.mark.slow]
FLAGS = {"cuda": "13.0", "torch": "2.13.0", "torch_index": "pypi", "platform": "linux/aarch64"}


def pins_of(project) -> dict[str, tuple[str, tuple[str, ...]]]:
    text = (project / "requirements-rebuild.txt").read_text()
    return {pin.name: (pin.version, pin.hashes) for pin in parse_pins(split_lock(text)[1])}


def test_uv_on_the_host_locks_pypis_aarch64_cuda_build(tmp_path):
    project = make_project(tmp_path / "uv", "torch\ntorchvision\n")
    result = run_lock(load_bundle(project), resolver="uv", **FLAGS)
    assert result.resolution.where == "host"
    pins = pins_of(project)
    assert pins["torch"][0] == "2.13.0" and pins["torch"][1]
    assert any(name.startswith("nvidia-") for name in pins)  # PyPI's aarch64 torch 2.13 is a CUDA 13.0 build
    assert "linux_aarch64" in (project / "requirements-rebuild.txt").read_text()


@pytest.mark.docker
def test_an_amd64_image_is_refused_for_an_aarch64_target(tmp_path, debian_python_image):
    project = make_project(tmp_path / "p", "torch\n", base_image=debian_python_image)
    with pytest.raises(LockError, match="is amd64, but the Target is linux_aarch64") as caught:
        run_lock(load_bundle(project), **FLAGS)
    assert "--resolver uv" in caught.value.hint
    assert not (project / "requirements-rebuild.txt").exists()
