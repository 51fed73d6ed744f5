"""Two resolvers, one lock: pip-tools (the default) and uv (`--resolver uv`) give the same
pins and hashes for the same Target; uv resolves an aarch64 (GH200/GB200) Target from this
x86-64 host, and the lock says which platform and resolver made it."""

from __future__ import annotations

import json
import urllib.request

import pytest

from bundler.lock.lockfile import bundle_lock, parse_pins, split_lock
from bundler.lock.run import run_lock
from bundler.target.bundle import load_bundle
from tests.hostile.harness import assert_refused, run
from tests.lock_support import HOST_PYTHON, make_project


def locked(project) -> tuple[dict[str, str], dict[str, tuple[str, ...]], str]:
    text = (project / "requirements-rebuild.txt").read_text()
    pins = parse_pins(split_lock(text)[1])
    return {p.name: p.version for p in pins}, {p.name: p.hashes for p in pins}, text


def lock_with_both(tmp_path, requirements: str, **flags) -> tuple[tuple, tuple]:
    results = []
    for resolver in ("pip-tools", "uv"):
        project = make_project(tmp_path / resolver, requirements)
        result = run_lock(load_bundle(project), resolver=resolver, **flags)
        assert result.action == "written" and result.resolution.resolver.startswith(resolver)
        results.append(locked(project))
    return results[0], results[1]


@pytest.mark.parametrize(
    "flags",
    [{"cuda": "12.8"}, {"rocm": "6.4"}, {"cpu": True}],
    ids=["cuda", "rocm", "cpu"],
)
def test_both_resolvers_give_the_same_pins_and_hashes(tmp_path, indexed, flags):
    piptools, uv = lock_with_both(tmp_path, "torch==2.9.1\ntorchvision\ntorchaudio\nnumpy\n", **flags)
    assert piptools[0] == uv[0] and piptools[1] == uv[1]
    assert "# resolver: pip-tools " in piptools[2] and "# resolver: uv " in uv[2]


def test_a_uv_lock_is_fresh_for_either_resolver_and_relocks_with_its_pins(tmp_path, indexed):
    project = make_project(tmp_path / "p")
    run_lock(load_bundle(project), cuda="12.8", resolver="uv")
    assert bundle_lock(load_bundle(project)).state.status == "fresh"
    assert run_lock(load_bundle(project)).action == "unchanged"  # the resolver is not part of the Target
    (project / "requirements.in").write_text("torch==2.9.1\nnumpy==1.26.4\n")
    again = run_lock(load_bundle(project), resolver="uv")
    assert again.action == "written" and locked(project)[0]["numpy"] == "1.26.4"


def test_a_uv_conflict_is_one_paragraph_naming_the_pins(tmp_path, indexed):
    project = make_project(tmp_path / "p", "torch==2.9.1\nnumpy==1.26.4\nnumpy==2.1.0\n")
    outcome = run(["lock", str(project), "--cpu", "--resolver", "uv"], cwd=tmp_path, watched=(project,))
    assert_refused(outcome, 6, "numpy")


def test_an_unknown_resolver_and_a_missing_uv_are_refused(tmp_path):
    project = make_project(tmp_path / "p")
    assert_refused(run(["lock", str(project), "--resolver", "poetry"], cwd=tmp_path, watched=(project,)), 2, "'poetry'", "pip-tools")
    shadow = tmp_path / "shadow" / "uv"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('uv is not installed here')\n")
    outcome = run(
        ["lock", str(project), "--cpu", "--resolver", "uv"], cwd=tmp_path, env={"PYTHONPATH": str(shadow.parent)}, watched=(project,)
    )
    assert_refused(outcome, 2, "--resolver uv needs uv", "pip install uv")


# ----- real PyPI: metadata and hashes only ---------------------------------------------------------
def pypi_hashes(project: str) -> dict[str, str]:
    request = urllib.request.Request(f"https://pypi.org/simple/{project}/", headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        return {f["filename"]: f["hashes"]["sha256"] for f in json.load(response)["files"]}


@pytest.mark.slow
def test_both_resolvers_agree_on_a_real_cuda_lock_from_pypi(tmp_path):
    piptools, uv = lock_with_both(tmp_path, "torch\ntorchvision\n", cuda="12.8", torch="2.9.1", torch_index="pypi")
    assert piptools[0] == uv[0] and piptools[1] == uv[1]
    assert piptools[0]["torch"] == "2.9.1" and any(name.startswith("nvidia-") for name in piptools[0])


@pytest.mark.slow
@pytest.mark.parametrize(
    "flags, torch, nvidia",
    [
        ({"cuda": "13.0", "torch": "2.13.0"}, "2.13.0", True),  # PyPI's aarch64 wheel is a CUDA 13.0 build from 2.11
        ({"cpu": True, "torch": "2.9.1"}, "2.9.1", False),  # before 2.11 it is a CPU build
    ],
    ids=["cu130", "cpu"],
)
def test_uv_locks_an_aarch64_target_from_this_x86_64_host(tmp_path, flags, torch, nvidia):
    project = make_project(tmp_path / "p", "torch\ntorchvision\n")
    result = run_lock(load_bundle(project), platform="linux/aarch64", torch_index="pypi", resolver="uv", **flags)
    assert result.resolution.where == "host"
    versions, hashes, text = locked(project)
    py = "cp" + HOST_PYTHON.replace(".", "")
    wheel = f"torch-{torch}-{py}-{py}-manylinux_2_28_aarch64.whl"
    assert versions["torch"] == torch and pypi_hashes("torch")[wheel] in hashes["torch"]
    assert any(name.startswith("nvidia-") for name in versions) is nvidia
    assert "(linux_aarch64)" in text.splitlines()[2] and "# resolver: uv " in text and "for linux_aarch64" in text
    assert 'platform = "linux_aarch64"' in (project / "bundle.toml").read_text()
    assert bundle_lock(load_bundle(project)).state.status == "fresh"
