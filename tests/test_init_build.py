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
