"""An adopted repository through the real `bundler lock` and `bundler build` on the engine:
the code layer is the repository as it is laid out, the image's entry runs the command
init found, and `bundler check` passes on it."""

from __future__ import annotations

import json

import pytest

from tests.adopt_support import tree_hashes, write_shape
from tests.build_support import build, remove_built, run_container
from tests.conftest import run_cli
from tests.fakeindex import real_torch_index

pytestmark = [pytest.mark.docker, pytest.mark.slow]


def test_adopted_repository_locks_builds_and_runs_its_own_command(
    tmp_path, docker_client, docker_engine, debian_python_image, cpu_torch_wheel, monkeypatch
):
    index = real_torch_index(tmp_path / "torchindex", cpu_torch_wheel)
    monkeypatch.setenv("BUNDLER_INDEX_MAP", f"https://download.pytorch.org/whl={index}")
    root = write_shape(tmp_path / "repo", "requirements")
    before = tree_hashes(root)
    assert run_cli("init", str(root), "--cpu", "--torch", "2.13.0", "--python", "3.11", "--no-input").returncode == 0
    locked = run_cli("lock", str(root), "--json")
    assert locked.returncode == 0, locked.stderr
    lock = (root / "requirements-rebuild.txt").read_text()
    assert "tqdm==" in lock and "packaging==" in lock  # requirements.txt and its -r include, read where they are
    assert json.loads(locked.stdout)["ok"] is True
    checked = run_cli("check", str(root))
    assert checked.returncode == 0, checked.stderr
    assert "matches requirements.txt" in checked.stdout + checked.stderr  # the lock's input is the project's own file
    original = (root / "requirements.txt").read_text()
    (root / "requirements.txt").write_text(original + "packaging\n")
    stale = run_cli("check", str(root))
    (root / "requirements.txt").write_text(original)
    assert stale.returncode == 1 and "requirements.txt changed since the lock was written" in stale.stdout + stale.stderr
    tag = "bundler-test/adopted:1"
    result, data = build(root, "--base", debian_python_image, "--tag", tag)
    try:
        assert result.returncode == 0, result.stderr[-3000:]
        code, logs, container = run_container(docker_client, tag, ["pilot", "--steps", "2"])  # the image's entry: [project] entry
        container.remove(force=True)
        assert code == 0 and "trained 2" in logs, logs
        code, logs, container = run_container(
            docker_client, tag, ["sh", "-c", "pwd; ls requirements/common.txt train.py; ls data 2>&1 || true"]
        )
        container.remove(force=True)
        assert code == 0 and "/opt/bundle/project" in logs and "requirements/common.txt" in logs and "No such file" in logs, logs
    finally:
        remove_built(docker_engine, data)
    after = tree_hashes(root)
    assert {name: after[name] for name in before} == before


def test_the_projects_own_package_is_built_into_the_image_as_a_hashed_wheel(
    tmp_path, docker_client, docker_engine, debian_python_image, cpu_torch_wheel, monkeypatch
):
    """A src/ layout (importable only once installed): init turns install_project on and takes the
    console script as the entry; the build makes the wheel with the project's own backend in the
    builder container and installs it after the dependency image; a code-only change rebuilds the
    wheel and the code layers only."""
    index = real_torch_index(tmp_path / "torchindex", cpu_torch_wheel)
    monkeypatch.setenv("BUNDLER_INDEX_MAP", f"https://download.pytorch.org/whl={index}")
    root = write_shape(tmp_path / "repo", "srclayout")
    before = tree_hashes(root)
    assert run_cli("init", str(root), "--cpu", "--torch", "2.13.0", "--python", "3.11", "--no-input").returncode == 0
    assert run_cli("lock", str(root)).returncode == 0
    assert run_cli("check", str(root)).returncode == 0
    tag = "bundler-test/adopted-wheel:1"
    built = []
    try:
        result, data = build(root, "--base", debian_python_image, "--tag", tag)
        built.append(data)
        assert result.returncode == 0, result.stderr[-3000:]
        wheel = data["project_wheel"]
        assert wheel["file"].startswith("srcpkg-0.1.0-") and wheel["reused"] is False and len(wheel["sha256"]) == 64
        assert f"Project wheel: {wheel['file']} (sha256 {wheel['sha256'][:16]}…, built by the project's own backend)" in result.stderr
        code, logs, container = run_container(docker_client, tag, ["pilot"])  # the entry: the console script, on PATH
        container.remove(force=True)
        assert code == 0 and "hello from srcpkg packaging" in logs, logs
        script = "python scripts/use.py && cd / && python -c 'import srcpkg; print(srcpkg.__file__)'"
        script += " && cat /opt/bundle/wheel/requirements.txt"
        code, logs, container = run_container(docker_client, tag, ["sh", "-c", script])
        container.remove(force=True)
        assert code == 0 and "script: hello from srcpkg" in logs and "/opt/venv/lib/python3.11/site-packages/srcpkg" in logs, logs
        assert f"--hash=sha256:{wheel['sha256']}" in logs
        (root / "src" / "srcpkg" / "__init__.py").write_text('GREETING = "changed"\n')  # a code-only change
        result, data = build(root, "--base", debian_python_image, "--tag", tag)
        built.append(data)
        assert result.returncode == 0, result.stderr[-3000:]
        assert data["context"]["deps_reused"] is True and data["project_wheel"]["sha256"] != wheel["sha256"]
        code, logs, container = run_container(docker_client, tag, ["pilot"])
        container.remove(force=True)
        assert code == 0 and "changed packaging" in logs, logs
    finally:
        for data in built:
            remove_built(docker_engine, data)
    after = tree_hashes(root)
    assert {name: after[name] for name in before if name != "src/srcpkg/__init__.py"} == {
        name: digest for name, digest in before.items() if name != "src/srcpkg/__init__.py"
    }
