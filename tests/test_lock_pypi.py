"""Locking torch from PyPI (`--torch-index pypi`): the real PyPI, metadata and hashes only.

PyPI's Linux x86-64 torch is itself a CUDA build; when it is the Target's build it can be
locked from PyPI (the route of a PyPI-only mirror). These tests resolve a real CUDA lock
against PyPI without downloading a wheel, refuse every other build naming the CUDA PyPI
serves, and read such a lock back with `bundler check` and the diagnostics.
"""

from __future__ import annotations

import json
import sys
import urllib.request
from pathlib import Path

import pytest

from bundler.lock.lockfile import bundle_lock, parse_pins, split_lock
from bundler.lock.run import run_lock
from bundler.target.bundle import load_bundle
from tests.conftest import run_cli
from tests.hostile.harness import assert_refused, run
from tests.lock_support import HOST_PYTHON, make_project

DIAGNOSTICS = Path(__file__).resolve().parents[1] / "diagnostics"


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def pypi_sha256(project: str, filename: str) -> str:
    """The sha256 PyPI's simple API (PEP 691) gives for one file, read independently of bundler."""
    request = urllib.request.Request(f"https://pypi.org/simple/{project}/", headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        files = json.load(response)["files"]
    return next(f["hashes"]["sha256"] for f in files if f["filename"] == filename)


@pytest.mark.slow
def test_a_real_cuda_lock_from_pypi_pins_torch_triton_and_every_nvidia_wheel_with_hashes(tmp_path, monkeypatch):
    monkeypatch.setenv("BUNDLER_CACHE_DIR", str(tmp_path / "cache"))
    project = make_project(tmp_path / "p", "torch\ntorchvision\ntorchaudio\n")  # the host's Python: resolved on this host
    result = run_lock(load_bundle(project), cuda="12.8", torch="2.9.1", torch_index="pypi")
    assert result.action == "written" and result.resolution.where == "host"
    text = (project / "requirements-rebuild.txt").read_text()
    pins = {pin.name: pin for pin in parse_pins(split_lock(text)[1])}
    # PyPI's wheels carry no local label; torchvision and torchaudio pair with PyPI's torch
    assert (pins["torch"].version, pins["torchvision"].version, pins["torchaudio"].version) == ("2.9.1", "0.24.1", "2.9.1")
    assert pins["triton"].version == "3.5.1"
    nvidia = {name: pin for name, pin in pins.items() if name.startswith("nvidia-")}
    assert nvidia["nvidia-cublas-cu12"].version == "12.8.4.1" and nvidia["nvidia-cuda-runtime-cu12"].version.startswith("12.8.")
    assert all(pin.hashes for pin in pins.values())
    py = "cp" + HOST_PYTHON.replace(".", "")
    wheel = f"torch-2.9.1-{py}-{py}-manylinux_2_28_x86_64.whl"
    assert pypi_sha256("torch", wheel) in pins["torch"].hashes
    assert (
        pypi_sha256("nvidia-cudnn-cu12", "nvidia_cudnn_cu12-9.10.2.21-py3-none-manylinux_2_27_x86_64.whl")
        in nvidia["nvidia-cudnn-cu12"].hashes
    )
    # the source is recorded, and nothing points at PyTorch's index
    assert "# torch-index: pypi" in text and "--index-url https://pypi.org/simple\n" in text
    assert "download.pytorch.org" not in text and "+cu128" not in text
    assert "# target: torch 2.9.1 from PyPI for cuda 12.8" in text
    assert 'torch_index = "pypi"' in (project / "bundle.toml").read_text()
    # metadata and hashes only: torch alone is 900 MB, its nvidia-* wheels 3 GB more
    assert folder_bytes(tmp_path / "cache") < 50_000_000
    # bundler check and a re-lock read it as fresh; the default index makes it stale
    check = run_cli("check", str(project), "--json")
    lock_item = next(item for item in json.loads(check.stdout)["items"] if item["name"] == "lock present and fresh")
    assert lock_item["status"] == "pass", lock_item
    assert run_lock(load_bundle(project)).action == "unchanged"
    bundle_file = project / "bundle.toml"
    bundle_file.write_text(bundle_file.read_text().replace('torch_index = "pypi"', 'torch_index = "pytorch"'))
    state = bundle_lock(load_bundle(project)).state
    assert state.status == "stale" and "torch_index 'pypi' -> 'pytorch'" in state.detail


@pytest.mark.parametrize(
    "flags, words",
    [
        (["--cuda", "13.0"], ["PyPI's torch 2.9.1 for Linux x86-64 is the CUDA 12.8 build", "not CUDA 13.0", "2.11.0"]),
        (["--cuda", "12.6"], ["is the CUDA 12.8 build", "not CUDA 12.6", "2.7.0, 2.7.1"]),
        (["--rocm", "6.4"], ["PyPI has no ROCm build of torch", "CUDA 12.8", "--torch-index pytorch"]),
        (["--cpu"], ["is the CUDA 12.8 build", "not the CPU build"]),
        (["--cuda", "12.8", "--torch", "2.11.0"], ["PyPI's torch 2.11.0 for Linux x86-64 is the CUDA 13.0 build", "--cuda 13.0"]),
    ],
)
def test_a_build_pypi_does_not_serve_is_refused_naming_the_one_it_serves(tmp_path, flags, words):
    project = make_project(tmp_path / "p")
    outcome = run(["lock", str(project), *flags, "--torch-index", "pypi"], cwd=tmp_path, watched=(project,))
    assert_refused(outcome, 4, *words)


def test_torch_index_from_bundle_toml_plans_pypi_without_labels_or_pytorch_index(tmp_path):
    project = make_project(tmp_path / "p", backend="cuda", accelerator="12.8")
    bundle_file = project / "bundle.toml"
    bundle_file.write_text(bundle_file.read_text().replace('base_digest = ""', 'base_digest = ""\ntorch_index = "pypi"'))
    result = run_cli("lock", str(project), "--dry-run", "--json")
    assert result.returncode == 0, result.stderr
    plan = json.loads(result.stdout)
    assert plan["index_url"] == "https://pypi.org/simple" and plan["extra_index_urls"] == []
    assert plan["torch_index"] == "pypi" and plan["pins"] == ["torch==2.9.1", "torchvision==0.24.1"]
    assert plan["target"]["torch_index"] == "pypi"


def test_an_unknown_torch_index_is_refused_in_the_flag_and_in_bundle_toml(tmp_path):
    project = make_project(tmp_path / "p")
    assert_refused(run(["lock", str(project), "--torch-index", "conda"], cwd=tmp_path, watched=(project,)), 2, "'conda'", "pypi")
    bundle_file = project / "bundle.toml"
    bundle_file.write_text(bundle_file.read_text().replace('base_digest = ""', 'base_digest = ""\ntorch_index = "conda"'))
    assert_refused(run(["lock", str(project), "--dry-run"], cwd=tmp_path, watched=(project,)), 3, str(bundle_file), "torch_index")


def test_relocking_for_the_default_index_keeps_bundle_toml_free_of_the_key(tmp_path, indexed):
    project = make_project(tmp_path / "p")
    run_lock(load_bundle(project), cuda="12.8")
    assert "torch_index" not in (project / "bundle.toml").read_text()
    assert "# torch-index: pytorch" in (project / "requirements-rebuild.txt").read_text()


# ----- the diagnostics' package stage reads the source ----------------------------------------
PYPI_LOCK = """# requirements-rebuild.txt: hashed lock written by `bundler lock`.
# build: cu128
# torch-index: {source}
--index-url {index}

torch=={torch} \\
    --hash=sha256:{h}
triton==3.5.1 \\
    --hash=sha256:{h}
"""


@pytest.mark.parametrize(
    "source, locked, installed, status, words",
    [
        ("pypi", "2.9.1", "2.9.1", "pass", []),
        ("pypi", "2.9.1", "2.9.1+cu128", "fail", ["locked 2.9.1 from PyPI", "PyTorch's index build"]),
        ("pytorch", "2.9.1+cu128", "2.9.1", "fail", ["locked 2.9.1+cu128 from PyTorch's index", "PyPI's unlabelled build"]),
    ],
)
def test_the_package_stage_knows_where_the_lock_took_torch_from(tmp_path, source, locked, installed, status, words):
    sys.path.insert(0, str(DIAGNOSTICS))
    from bdiag.checkup import Checkup, read_bundle
    from bdiag.probe import Probe
    from bdiag.result import StageResult
    from bdiag.stages import packages
    from tests.diagnostics_support import NAMES

    project = make_project(tmp_path / "p")
    index = "https://pypi.org/simple" if source == "pypi" else "https://download.pytorch.org/whl/cu128"
    (project / "requirements-rebuild.txt").write_text(PYPI_LOCK.format(source=source, index=index, torch=locked, h="a" * 64))

    class Observed(Probe):
        def installed_distributions(self) -> dict:
            return {"torch": installed, "triton": "3.5.1"}

        def pip_check(self):
            return True, 0, ""

    result = StageResult(packages.NAME, NAMES.index(packages.NAME) + 1)
    packages.run(
        Checkup(
            probe=Observed(), backend="cuda", backend_source="test", bundle=read_bundle(str(project / "bundle.toml")), results_dir=None
        ),
        result,
    )
    assert result.status == status, result.reason
    assert result.values["torch_index"] == source
    assert all(word in " ".join(result.values["other_version"]) for word in words), result.values["other_version"]
