"""Lock the real CPU torch build (torch 2.13.0+cpu, cp311) and install it with --require-hashes."""

from __future__ import annotations

import os
import venv

import pytest

from bundler.lock.lockfile import parse_pins, split_lock
from bundler.lock.run import run_lock
from bundler.target.bundle import Target, load_bundle
from tests.fakeindex import real_torch_index
from tests.lock_support import HOST_PYTHON, make_project, run_install_check

pytestmark = [pytest.mark.slow]


def test_real_cpu_torch_locks_installs_with_hashes_and_imports(tmp_path, monkeypatch, cpu_torch_wheel):
    # PyTorch's cpu index is unreachable: a local PEP 503 page links the real wheel; PyPI is real.
    torch_root = real_torch_index(tmp_path / "torchindex", cpu_torch_wheel)
    monkeypatch.setenv("BUNDLER_INDEX_MAP", f"https://download.pytorch.org/whl={torch_root}")
    project = make_project(tmp_path / "p", "torch==2.13.0\n", python=HOST_PYTHON)
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
    verified = run_install_check(
        lock,
        Target("cpu", "", "2.13.0", HOST_PYTHON),
        str(env_dir / "bin" / "python"),
        ("--index-url", "https://pypi.org/simple", "--find-links", str(cpu_torch_wheel.parent)),
        env=env,
    )
    assert verified.ok, verified.output
    assert verified.torch["version"] == "2.13.0+cpu" and verified.torch["cuda"] is None
