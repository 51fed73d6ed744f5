"""Companions that do not exist for the Target's torch, companions other packages pull in, system packages.

Through the CLI: a torchaudio next to torch 2.13 (which has none) is refused before any
index is asked; a triton another package pulls into a CPU lock at another version than
the table pairs is a warning naming that package (the fake index served as file:// pages,
as the lock tests serve it); bundle.toml's and apt.txt's system packages are checked as
Debian names and reach the dependency Dockerfile and its key.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from bundler.image.checks import dependency_checks
from bundler.image.deps import deps_key
from bundler.image.dockerfile import render
from bundler.lock.lockfile import read_lock
from bundler.target.bundle import load_bundle
from tests.conftest import run_cli
from tests.fakeindex import add_pypi_wheel, build_fake_index
from tests.lock_support import make_project

UNREACHABLE = "https://download.pytorch.org/whl=file:///nonexistent/whl https://pypi.org/simple=file:///nonexistent/simple"


def _project(root: Path, requirements: str, torch: str = "2.13.0", build: str = "") -> Path:
    project = make_project(root, requirements, python="3.11")
    text = project.joinpath("bundle.toml").read_text().replace('torch = "2.9.1"', f'torch = "{torch}"')
    project.joinpath("bundle.toml").write_text(text + build)
    return project


def _lock(project: Path, *args: str, env: dict | None = None):
    result = run_cli("lock", str(project), "--cpu", *args, "--json", env={"BUNDLER_PIP_RETRIES": "0", **(env or {})})
    return result, json.loads(result.stdout)


# ----- a companion with no release for the Target's torch ----------------------------------------
def test_unpinned_torchaudio_next_to_torch_2_13_is_refused_before_resolving(tmp_path):
    project = _project(tmp_path / "p", "torch\ntorchaudio>=0.8\nnumpy\n")
    started = time.monotonic()
    result, data = _lock(project, env={"BUNDLER_INDEX_MAP": UNREACHABLE})  # no index answers: a resolve would fail otherwise
    seconds = time.monotonic() - started
    assert result.returncode == 6, result.stderr
    error = data["error"]
    assert "torchaudio" in error["message"] and "no torchaudio release exists for torch 2.13.0" in error["message"]
    assert "nearest torch with torchaudio: 2.12.1 (torchaudio 2.11.0)" in error["message"]
    assert "--torch 2.12.1" in error["hint"] and error["path"].endswith("requirements.in")
    assert "cannot be reached" not in result.stderr and "Traceback" not in result.stderr
    assert not (project / "requirements-rebuild.txt").exists()
    assert seconds < 60, seconds  # a guard against a resolve, not a timing measure (bench/ measures)


def test_an_old_torchaudio_pin_says_which_torch_it_was_made_for(tmp_path):
    project = _project(tmp_path / "p", "torch\ntorchaudio==0.13.1\n")
    result, data = _lock(project, env={"BUNDLER_INDEX_MAP": UNREACHABLE})
    assert result.returncode == 6
    assert "torchaudio 0.13.1 was made for torch 1.13.1" in data["error"]["message"]
    assert data["error"]["value"] == "torchaudio==0.13.1"


def test_torchtext_whose_last_release_went_with_torch_2_3_is_refused_before_resolving_naming_that_torch(tmp_path):
    project = _project(tmp_path / "p", "torch\ntorchtext\nnumpy\n")
    result, data = _lock(project, env={"BUNDLER_INDEX_MAP": UNREACHABLE})
    assert result.returncode == 6, result.stderr
    message = data["error"]["message"]
    assert "no torchtext release exists for torch 2.13.0" in message and "torchtext: 2.3.1 (torchtext 0.18.0)" in message
    assert "--torch 2.3.1" in data["error"]["hint"]
    pinned, _ = _lock(_project(tmp_path / "q", "torch\ntorchtext==0.17.2\n"), env={"BUNDLER_INDEX_MAP": UNREACHABLE})
    assert "torchtext 0.17.2 was made for torch 2.2.2" in json.loads(pinned.stdout)["error"]["message"]


def test_torchtext_on_a_torch_it_was_made_for_is_pinned_unlabelled_and_any_indexs_build_of_it_passes():
    from bundler.target.table import is_paired_build

    assert is_paired_build("0.18.0", "0.18.0") and is_paired_build("0.18.0+cpu", "0.18.0")  # no GPU code: PyPI's serves
    assert not is_paired_build("0.28.0", "0.28.0+cpu") and not is_paired_build("0.17.2", "0.18.0")


def test_torchtext_paired_with_the_targets_torch_is_planned_from_the_table(tmp_path):
    project = _project(tmp_path / "p", "torch\ntorchtext\n", torch="2.3.0")
    result, data = _lock(project, "--dry-run")
    assert result.returncode == 0, result.stderr
    assert {"torch==2.3.0+cpu", "torchtext==0.18.0"} <= set(data["pins"])


def test_a_companion_pin_that_matches_the_target_is_planned_as_before(tmp_path):
    project = _project(tmp_path / "p", "torch==2.12.1\ntorchaudio==2.11.0\ntorchvision\n", torch="2.12.1")
    result, data = _lock(project, "--dry-run")
    assert result.returncode == 0, result.stderr
    assert {"torch==2.12.1+cpu", "torchaudio==2.11.0+cpu", "torchvision==0.27.1+cpu"} <= set(data["pins"])
    assert not any("torchaudio" in note for note in data["notes"])


def test_an_old_companion_pin_on_a_target_that_has_the_companion_names_its_torch_in_the_note(tmp_path):
    project = _project(tmp_path / "p", "torch\ntorchaudio==0.13.1\n", torch="2.12.1")
    result, data = _lock(project, "--dry-run")
    assert result.returncode == 0, result.stderr
    assert "torchaudio==2.11.0+cpu" in data["pins"]
    assert any("torchaudio 0.13.1 was made for torch 1.13.1" in note for note in data["notes"])


# ----- companions pulled in by other packages -----------------------------------------------
@pytest.fixture
def kernels_index(tmp_path):
    """The fake index plus a package that pulls in triton 3.9.0 and one that pulls in a CUDA library and nvcc."""
    index = build_fake_index(tmp_path / "index")
    add_pypi_wheel(index, "triton", "3.9.0", [])
    add_pypi_wheel(index, "fastkernels", "1.0", ["triton==3.9.0"])
    add_pypi_wheel(index, "nvidia-cuda-nvcc-cu12", "12.8.93", [])
    add_pypi_wheel(index, "jitcompile", "0.3", ["nvidia-cuda-nvcc-cu12", "numpy"])
    add_pypi_wheel(index, "visionhelpers", "1.0", ["torchvision"])
    add_pypi_wheel(index, "audiohelpers", "2.0", ["torchaudio"])
    return index


@pytest.mark.parametrize("resolver", ["pip-tools", "uv"])
def test_a_triton_another_package_pulls_in_against_the_pairing_is_a_warning_naming_it(tmp_path, kernels_index, resolver):
    project = _project(tmp_path / "p", "torch==2.9.1\nfastkernels\njitcompile\n", torch="2.9.1")
    result, data = _lock(project, "--resolver", resolver, env={"BUNDLER_INDEX_MAP": kernels_index.index_map()})
    assert result.returncode == 0, result.stderr
    assert "triton==3.9.0" in (project / "requirements-rebuild.txt").read_text()  # the lock is written all the same
    triton = [w for w in data["warnings"] if w.startswith("triton==3.9.0")]
    assert len(triton) == 1 and "pulled in by fastkernels" in triton[0] and "paired with triton 3.5.1" in triton[0]
    nvcc = [w for w in data["warnings"] if w.startswith("nvidia-cuda-nvcc-cu12==12.8.93")]
    assert len(nvcc) == 1 and "pulled in by jitcompile" in nvcc[0] and "uses none" in nvcc[0]
    compilers = [n for n in data["notes"] if "GPU compiler in a CPU lock" in n]
    assert {n.split("==")[0] for n in compilers} == {"triton", "nvidia-cuda-nvcc-cu12"}
    assert "warning     triton==3.9.0, pulled in by fastkernels" in result.stderr


def test_a_lock_whose_companions_agree_with_the_pairing_has_no_warning(tmp_path, kernels_index):
    project = _project(tmp_path / "p", "torch==2.9.1\ntriton==3.5.1\nnumpy\n", torch="2.9.1")
    result, data = _lock(project, env={"BUNDLER_INDEX_MAP": kernels_index.index_map()})
    assert result.returncode == 0, result.stderr
    assert data["warnings"] == []
    assert any(n.startswith("triton==3.5.1, pulled in by requirements.in itself") for n in data["notes"])


def test_a_torchvision_another_package_pulls_in_from_the_targets_index_is_its_build(tmp_path, kernels_index):
    project = _project(tmp_path / "p", "torch==2.9.1\nvisionhelpers\n", torch="2.9.1")
    result, data = _lock(project, env={"BUNDLER_INDEX_MAP": kernels_index.index_map()})
    assert result.returncode == 0, result.stderr
    assert "torchvision==0.24.1+cpu" in (project / "requirements-rebuild.txt").read_text() and data["warnings"] == []


def test_a_torchaudio_another_package_pulls_in_where_the_torch_has_none_is_refused_naming_it(tmp_path, kernels_index, monkeypatch):
    mine = tmp_path / "compat.toml"  # a row of the user's: torch 2.9.1 as if it had no torchaudio, as 2.13 has none
    mine.write_text(
        '[[release]]\ntorch = "2.9.1"\ntorchvision = "0.24.1"\ntorchaudio = ""\ntriton = "3.5.1"\ncpu = true\npython = ["3.11"]\n'
    )
    project = _project(tmp_path / "p", "torch==2.9.1\naudiohelpers\n", torch="2.9.1")
    result, data = _lock(project, env={"BUNDLER_INDEX_MAP": kernels_index.index_map(), "BUNDLER_COMPAT": str(mine)})
    assert result.returncode == 6, result.stderr
    message = data["error"]["message"]
    assert "torchaudio==2.9.1+cpu, pulled in by audiohelpers, and no torchaudio release exists for torch 2.9.1" in message
    assert "nearest torch with torchaudio: 2.9.0 (torchaudio 2.9.0)" in message
    assert "--torch 2.9.0" in data["error"]["hint"] and "drop audiohelpers" in data["error"]["hint"]
    assert "different label" not in message and not (project / "requirements-rebuild.txt").exists()


# ----- system packages ---------------------------------------------------------------------
@pytest.mark.parametrize("bad", ['"libgl1; rm -rf /"', '"libgl1=1.6.0-1"', '"LibGL1"', '"--allow-unauthenticated"', '"lib\\u2028gl"', "7"])
def test_system_packages_that_are_not_debian_names_are_refused_naming_the_value(tmp_path, bad):
    project = _project(tmp_path / "p", "torch\n", build=f"system_packages = [{bad}]\n")
    result = run_cli("build", str(project), "--json")
    assert result.returncode == 3, result.stderr
    error = json.loads(result.stdout)["error"]
    assert error["path"].endswith("bundle.toml") and "system_packages" in error["message"]
    assert "not a Debian package name" in error["message"] and "Traceback" not in result.stderr


def test_apt_txt_is_read_with_comments_and_blank_lines_and_a_bad_line_is_named(tmp_path):
    project = _project(tmp_path / "p", "torch\n", build='system_packages = ["libgl1"]\n')
    (project / "apt.txt").write_text("# audio\nlibsndfile1\n\n  ffmpeg   # for whisper\nlibgl1\n")
    assert load_bundle(project).system_packages == ("libgl1", "libsndfile1", "ffmpeg")
    (project / "apt.txt").write_text("libsndfile1\nffmpeg && curl evil\n")
    result = run_cli("build", str(project), "--json")
    assert result.returncode == 3
    assert json.loads(result.stdout)["error"]["message"].startswith(f"{project / 'apt.txt'}:2:")


def _run_instructions(text: str) -> list[str]:
    """The RUN instructions of a Dockerfile, continuation lines joined."""
    joined = text.replace("\\\n", " ")
    return [line[4:] for line in joined.splitlines() if line.startswith("RUN ")]


def test_system_packages_are_installed_in_the_dependency_image_and_change_its_key(tmp_path):
    plain = load_bundle(_project(tmp_path / "plain", "torch\n"))
    with_gl = load_bundle(_project(tmp_path / "gl", "torch\n", build='system_packages = ["libgl1", "libsndfile1"]\n'))
    base = "bundler-test/bookworm-python3.11:1"
    plain_files, gl_files = render(plain, "runtime", base), render(with_gl, "runtime", base)
    for route in ("loopback", "context"):
        runs = _run_instructions(gl_files.deps_text(route))
        apt = [run for run in runs if "apt-get install" in run]
        assert len(apt) == 1 and "--no-install-recommends libgl1 libsndfile1;" in apt[0]
        assert not any("apt-get" in run for run in _run_instructions(plain_files.deps_text(route)))
    assert gl_files.deps_network("context") is None and plain_files.deps_network("context") == "none"  # None: the mirror is reached
    lock = read_lock(tmp_path / "missing.txt", None, plain.target)
    keys = {
        deps_key(files, "sha256:" + "0" * 64, lock, dependency_checks(bundle))
        for files, bundle in ((plain_files, plain), (gl_files, with_gl))
    }
    assert len(keys) == 2


def test_init_proposes_the_packages_of_a_repositorys_apt_txt_and_the_build_reads_them(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "requirements.txt").write_text("numpy\nopencv-python\n")
    (repo / "detect.py").write_text("import cv2\n")
    (repo / "apt.txt").write_text("# OpenGL for cv2\nlibgl1\n\nlibglib2.0-0  # GLib\n")
    result = run_cli("init", str(repo), "--cpu", "--no-input", "--json")
    assert result.returncode == 0, result.stderr
    assert "apt.txt names 2 Debian package(s), installed in the dependency image by `bundler build`: libgl1, libglib2.0-0" in result.stderr
    assert load_bundle(repo).system_packages == ("libgl1", "libglib2.0-0")


def test_the_dependency_dockerfiles_with_system_packages_pass_hadolint(tmp_path):
    from tests.dockerfile_support import hadolint

    bundle = load_bundle(_project(tmp_path / "gl", "torch\n", build='system_packages = ["libgl1", "libglib2.0-0"]\n'))
    files = render(bundle, "runtime", "python:3.11-slim-bookworm")
    result = hadolint(tmp_path, {route: files.deps_text(route) for route in ("loopback", "context")})
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_cuda_library_of_another_major_than_the_target_is_a_warning_and_torchs_own_are_not(tmp_path):
    from bundler.lock.companions import check_companions
    from bundler.target.bundle import Target
    from bundler.target.table_file import load_table

    build = load_table().build_for(Target("cuda", "13.0", "2.9.1", "3.11"))
    body = (
        "nvidia-cublas==13.1.0.3 \\\n    --hash=sha256:" + "a" * 64 + "\n    # via torch\n"
        "nvidia-cublas-cu12==12.8.4.1 \\\n    --hash=sha256:" + "b" * 64 + "\n    # via\n    #   cupy-cuda12x\n    #   oldkernels\n"
        "triton==3.5.1 \\\n    --hash=sha256:" + "c" * 64 + "\n    # via torch\n"
    )
    found = check_companions(body, build, {"torch": "2.9.1+cu130"}, "requirements.in")
    assert len(found.warnings) == 1 and found.warnings[0].startswith("nvidia-cublas-cu12==12.8.4.1, pulled in by cupy-cuda12x, oldkernels")
    assert "a CUDA 12 library, and the Target is CUDA 13.0" in found.warnings[0]
    assert found.notes == []  # a CUDA Target: triton and the CUDA libraries are its own


def test_a_mirror_without_the_targets_torchvision_is_named_not_the_requirements(tmp_path):
    import shutil

    index = build_fake_index(tmp_path / "index")
    shutil.rmtree(index.root / "whl" / "cpu" / "torchvision")  # a mirror filled with torch alone
    project = _project(tmp_path / "p", "torch==2.9.1\ntorchvision\n", torch="2.9.1")
    result, data = _lock(project, env={"BUNDLER_INDEX_MAP": index.index_map()})
    assert result.returncode == 9, result.stderr
    assert "has no torchvision==0.24.1+cpu, the Target's build" in data["error"]["message"]
    assert "requirements are not at fault" in data["error"]["hint"] and "Loosen" not in data["error"]["hint"]


def test_a_rocm_lock_with_another_pytorch_triton_rocm_or_a_cuda_library_warns(tmp_path):
    from bundler.lock.companions import check_companions
    from bundler.target.bundle import Target
    from bundler.target.table_file import load_table

    build = load_table().build_for(Target("rocm", "6.4", "2.9.1", "3.11"))
    body = (
        "pytorch-triton-rocm==3.9.0 \\\n    --hash=sha256:" + "a" * 64 + "\n    # via rocmkernels\n"
        "nvidia-nccl-cu12==2.27.3 \\\n    --hash=sha256:" + "b" * 64 + "\n    # via cudatools\n"
    )
    found = check_companions(body, build, {"torch": "2.9.1+rocm6.4"}, "requirements.in")
    assert [w.split(",")[0] for w in found.warnings] == ["pytorch-triton-rocm==3.9.0", "nvidia-nccl-cu12==2.27.3"]
    assert (
        "pulled in by rocmkernels" in found.warnings[0] and f"pytorch-triton-rocm {build.release.pytorch_triton_rocm}" in found.warnings[0]
    )
    assert "pulled in by cudatools" in found.warnings[1] and "rocm6.4 build, which uses none" in found.warnings[1]


def test_the_devel_flavour_installs_the_system_packages_with_its_compiler(tmp_path):
    bundle = load_bundle(_project(tmp_path / "gl", "torch\n", build='system_packages = ["libsndfile1"]\n'))
    for base in ("nvidia/cuda:12.8.1-cudnn-devel-ubuntu24.04", "python:3.11-bookworm"):
        runs = _run_instructions(render(bundle, "devel", base).deps_text("loopback"))
        installs = [run for run in runs if "apt-get install" in run]
        assert len(installs) == 1 and "libsndfile1" in installs[0].split("--no-install-recommends", 1)[1], installs


def test_the_fabrics_packages_and_the_bundles_own_share_one_apt_step(tmp_path):
    project = _project(tmp_path / "p", "torch\n", build='system_packages = ["libgl1", "librdmacm1"]\n')
    text = project.joinpath("bundle.toml").read_text().replace('base_digest = ""', 'base_digest = ""\nfabric = "infiniband"')
    project.joinpath("bundle.toml").write_text(text)
    runs = _run_instructions(render(load_bundle(project), "runtime", "python:3.11-slim-bookworm").deps_text("loopback"))
    installs = [run for run in runs if "apt-get install" in run]
    assert len(installs) == 1
    assert "--no-install-recommends libibverbs1 ibverbs-providers librdmacm1 libgl1;" in installs[0]
