"""Lock the real CPU torch build (torch 2.13.0+cpu, cp311) and install it with --require-hashes."""

from __future__ import annotations

import os
import sys
import venv
from pathlib import Path

import pytest

from bundler.target.bundle import Target, load_bundle
from bundler.lock.run import run_lock
from bundler.lock.installcheck import run_install_check
from bundler.lock.lockfile import parse_pins, split_lock
from tests.fakeindex import real_torch_index
from tests.test_lock import make_project

WHEEL = Path("/opt/wheels/torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not WHEEL.is_file(), reason=f"{WHEEL} is not on this machine"),
    pytest.mark.skipif(sys.version_info[:2] != (3, 11), reason="the real wheel is cp311"),
]


def test_real_cpu_torch_locks_installs_with_hashes_and_imports(tmp_path, monkeypatch):
    # PyTorch's cpu index is unreachable: a local PEP 503 page links the real wheel; PyPI is real.
    torch_root = real_torch_index(tmp_path / "torchindex", WHEEL)
    monkeypatch.setenv("BUNDLER_INDEX_MAP", f"https://download.pytorch.org/whl={torch_root}")
    project = make_project(tmp_path / "p", "torch==2.13.0\n", python="3.11")
    project.joinpath("bundle.toml").write_text(project.joinpath("bundle.toml").read_text().replace('torch = "2.9.1"', 'torch = "2.13.0"'))
    result = run_lock(load_bundle(project), cpu=True)
    lock = project / "requirements-rebuild.txt"
    text = lock.read_text()
    pins = {pin.name: pin for pin in parse_pins(split_lock(text)[1])}
    assert pins["torch"].version == "2.13.0+cpu"
    assert "setuptools" in pins  # torch 2.13 needs setuptools>=77 at install time
    assert "--index-url https://download.pytorch.org/whl/cpu" in text and "file://" not in text
    assert result.action == "written"

    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")} | {"PIP_CONFIG_FILE": os.devnull}
    # install exactly the lock, with hashes: torch from the local copy of the cpu index, the rest from PyPI
    verified = run_install_check(lock, Target("cpu", "", "2.13.0", "3.11"), str(env_dir / "bin" / "python"),
                           ("--index-url", "https://pypi.org/simple", "--find-links", str(WHEEL.parent)), env=env)
    assert verified.ok, verified.output
    assert verified.torch["version"] == "2.13.0+cpu" and verified.torch["cuda"] is None
