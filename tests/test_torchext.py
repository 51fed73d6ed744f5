"""Source archives whose build imports torch: recognised from the resolver's log, resolved from
the archive's own metadata, built in the builder container against the Target's torch (build
isolation off), cached by archive and torch wheel, installed with --require-hashes.

The image test builds ``torchop`` (tests/torchext_support.py: one C++ op against torch's C++
API) from its source archive with the real CPU torch 2.13, imports and calls it in the image,
and builds again from the cache. The CUDA and ROCm routes are checked through their build plan."""

from __future__ import annotations

import json
import subprocess
import uuid
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet

from bundler.errors import LockError
from bundler.image import torchenv
from bundler.lock import torchprobe
from bundler.lock.hashes import IndexFile
from bundler.lock.torchbuild import REASON, StandIns, static_requirements, torch_build_failure, unpreparable, wanted_specifier
from bundler.target.bundle import Target
from tests.build_support import build_fresh, remove_tag
from tests.conftest import run_cli
from tests.deps_support import cpu_project, torch213_project, write_archive
from tests.fakeindex import real_torch_index
from tests.torchext_support import CUDA_ONLY_SETUP, DYNAMIC_SETUP, add_to_index, local_index, other_sdist, torchop_sdist

CPU311 = Target("cpu", "", "2.13.0", "3.11")
PIP_LOG = """\
    × Getting requirements to build wheel did not run successfully.
        File "<string>", line 8, in <module>
        ModuleNotFoundError: No module named 'torch'
        [end of output]
pip._internal.exceptions.FailedToPrepareCandidate: Failed to build 'torch-scatter' when getting requirements to build wheel
"""
UV_LOG = """\
  × Failed to build `flash-attn==2.8.3`
  ├─▶ The build backend returned an error
  ╰─▶ Call to `setuptools.build_meta:__legacy__.build_wheel` failed (exit status: 1)
      ModuleNotFoundError: No module named 'torch'
"""


# ----- recognised from the log, not from a list of names ----------------------------------------
def test_a_build_backend_without_torch_is_recognised_in_pips_and_uvs_logs():
    assert torch_build_failure(PIP_LOG) == ("torch-scatter", "")
    assert torch_build_failure(UV_LOG) == ("flash-attn", "2.8.3")
    other = PIP_LOG.replace("No module named 'torch'", "No module named 'Cython'")
    assert torch_build_failure(other) is None  # another missing build requirement is not this class
    assert torch_build_failure("ERROR: Cannot install numpy==1 and numpy==2") is None


def test_dependencies_are_read_from_the_archives_metadata(tmp_path):
    egg = torchop_sdist(tmp_path / "a", requires="numpy>=1.20\n\n[test]\npytest\n\n[:python_version < '3.12']\nsetuptools\n")
    assert static_requirements(egg) == (
        ["numpy>=1.20", 'pytest ; extra == "test"', "setuptools ; (python_version < '3.12')"],
        "egg-info/requires.txt",
    )
    static = write_archive(
        tmp_path / "static-1.0.tar.gz",
        {
            "static-1.0/PKG-INFO": "Metadata-Version: 2.2\nName: static\nVersion: 1.0\nRequires-Dist: einops\n",
            "static-1.0/setup.py": "import torch\n",
        },
    )
    assert static_requirements(static) == (["einops"], "PKG-INFO")


def test_an_archive_whose_dependencies_only_a_build_can_tell_is_refused_with_the_cause_and_routes(tmp_path):
    bare = write_archive(tmp_path / "scatterish-1.0.tar.gz", {"scatterish-1.0/setup.py": "import torch\n"})
    assert static_requirements(bare) is None
    stand_ins = StandIns(tmp_path / "stand-ins")
    with pytest.raises(LockError) as raised:
        stand_ins.add("scatterish", "", [IndexFile(bare.name, bare.as_uri(), "")], wanted_specifier("scatterish", []), CPU311)
    error = raised.value
    assert "scatterish==1.0" in error.message and "No module named 'torch'" in error.message and REASON in error.message
    assert "--no-build-isolation" in (error.hint or "") and "Loosen" not in (error.hint or "") and "previous lock" not in (error.hint or "")


def test_the_stand_in_takes_the_release_requirements_in_asks_for(tmp_path):
    new, old = torchop_sdist(tmp_path / "new"), torchop_sdist(tmp_path / "old", requires="numpy\n")
    old_named = old.with_name("torchop-0.0.9.tar.gz")
    old.rename(old_named)
    files = [IndexFile(new.name, new.as_uri(), ""), IndexFile(old_named.name, old_named.as_uri(), "")]
    stand_ins = StandIns(tmp_path / "stand-ins")
    chosen = stand_ins.add("torchop", "", files, wanted_specifier("torchop", ["torchop<0.1"]), CPU311)
    assert (chosen.version, chosen.requires) == ("0.0.9", ("numpy",))
    latest = stand_ins.add("torchop", "", files, wanted_specifier("torchop", ["requests"]), CPU311)
    assert latest.version == "0.1" and (tmp_path / "stand-ins" / "torchop" / "torchop-0.1-py3-none-any.whl").is_file()


def test_on_a_cpu_target_the_probe_gives_the_dependencies_and_its_absence_leaves_the_static_ones(tmp_path):
    from bundler.errors import ExternalError
    from bundler.lock.torchbuild import PREPARED

    archive = torchop_sdist(tmp_path / "a")
    files = [IndexFile(archive.name, archive.as_uri(), "")]
    probed = StandIns(tmp_path / "one", probe=lambda path, sha, name, version: ["six", "numpy>=2"])
    assert probed.add("torchop", "", files, SpecifierSet(), CPU311).requires == ("six", "numpy>=2")
    assert probed.archives[("torchop", "0.1")].source == PREPARED

    def unavailable(path, sha, name, version):
        raise ExternalError("no venv", hint="")

    kept = StandIns(tmp_path / "two", probe=unavailable).add("torchop", "", files, SpecifierSet(), CPU311)
    assert (kept.requires, kept.source) == (("typing-extensions",), "egg-info/requires.txt")
    none = StandIns(tmp_path / "three", probe=lambda *args: None).add("torchop", "", files, SpecifierSet(), CPU311)
    assert none.source == "egg-info/requires.txt"


def test_a_pyg_package_names_its_per_torch_wheel_index_in_the_refusal():
    error = unpreparable("torch-scatter", "2.1.2", CPU311, "its archive declares nothing")
    assert "https://data.pyg.org/whl/torch-2.13.0+cpu.html" in (error.hint or "")


# ----- the build environment per backend -----------------------------------------------------------
def test_a_cuda_targets_build_runs_on_the_devel_base_with_its_architectures():
    from bundler.target.table_file import load_table

    target = Target("cuda", "12.6", "2.13.0", "3.11")
    plan = torchenv.plan(target, "nvidia/cuda:runtime", "torch==2.13.0+cu126", "ab" * 32, ("setuptools", "ninja"), jobs=3)
    table = load_table()
    build = table.build_for(target)
    assert plan.devel and plan.base == table.base_images(build, "3.11")["devel"] and "devel" in plan.base
    assert plan.environment["CUDA_HOME"] == "/usr/local/cuda" and plan.environment["MAX_JOBS"] == "3"
    expected = torchenv.cuda_arch_list(build.arch)
    assert build.arch and plan.environment["TORCH_CUDA_ARCH_LIST"] == expected
    assert plan.build_requires == ("setuptools", "ninja") and "ab" * 32 in plan.cache_key


def test_the_arch_list_turns_sass_and_ptx_into_torchs_notation():
    assert torchenv.cuda_arch_list(("sm_80", "sm_90", "sm_100", "compute_120")) == "8.0;9.0;10.0;12.0+PTX"
    assert torchenv.cuda_arch_list(("sm_86", "compute_86")) == "8.6+PTX"


def test_a_rocm_targets_build_names_its_gfx_targets_and_a_cpu_build_stays_on_the_runtime_base():
    rocm = torchenv.plan(Target("rocm", "7.2", "2.13.0", "3.11"), "rt", "torch==2.13.0+rocm7.2", "c" * 64, (), jobs=2)
    assert rocm.devel and "ROCM_HOME" in rocm.environment and "CUDA_HOME" not in rocm.environment
    assert all(arch.startswith("gfx") for arch in rocm.environment.get("PYTORCH_ROCM_ARCH", "gfx").split(";"))
    cpu = torchenv.plan(CPU311, "bookworm-python", "torch==2.13.0+cpu", "d" * 64, (), jobs=2)
    assert (cpu.base, cpu.devel, cpu.environment) == ("bookworm-python", False, {"MAX_JOBS": "2", "FORCE_CUDA": "0"})
    assert cpu.build_requires == ("ninja",)  # BuildExtension honours MAX_JOBS only with ninja


def test_max_jobs_is_bounded_by_cpus_and_by_memory():
    assert torchenv.max_jobs(16, 8 * 2**30) == 4
    assert torchenv.max_jobs(2, 64 * 2**30) == 2
    assert torchenv.max_jobs(8, 2**30) == 1


def test_the_archives_build_requirements_leave_torch_out(tmp_path):
    pyproject = '[build-system]\nrequires = ["setuptools>=64", "torch>=2.0", "ninja"]\n'
    assert torchenv.build_requires(torchop_sdist(tmp_path / "p", extra={"pyproject.toml": pyproject})) == ("setuptools>=64", "ninja")
    plain = torchop_sdist(tmp_path / "s")
    assert torchenv.build_requires(plain) == ("setuptools", "wheel") and torchenv.imports_torch(plain)


def test_what_a_setup_py_imports_at_its_top_undeclared_is_a_build_requirement(tmp_path):
    # MinkowskiEngine's way: `import numpy` beside torch in setup.py, no pyproject; an optional import in a try is not one
    setup = (
        "import os, sys\nimport numpy as np\nfrom Cython.Build import cythonize\nimport torch\n"
        "from torch.utils.cpp_extension import CppExtension\nfrom setuptools import setup\nimport torchop\n"
        "try:\n    import yaml\nexcept ImportError:\n    yaml = None\n\ndef f():\n    import scipy\n"
        "if os.environ.get('BLAS'):\n    pass\nelse:\n    import pybind11\n"
    )
    archive = write_archive(tmp_path / "k-1.0.tar.gz", {"k-1.0/setup.py": setup, "k-1.0/torchop/__init__.py": ""})
    assert torchprobe.setup_imports(archive) == ["numpy", "cython", "pybind11"]  # a branch at the top runs too
    assert torchenv.build_requires(archive) == ("setuptools", "wheel", "numpy", "cython", "pybind11")
    declared = write_archive(
        tmp_path / "d-1.0.tar.gz",
        {"d-1.0/setup.py": setup, "d-1.0/pyproject.toml": '[build-system]\nrequires = ["setuptools", "numpy<2"]\n'},
    )
    assert torchprobe.build_system_requires(declared) == ("setuptools", "numpy<2", "cython", "torchop", "pybind11")


def test_a_setup_py_that_turns_ninja_off_builds_its_extensions_in_parallel_on_a_cpu_target_only(tmp_path):
    from bundler.image import builder

    setup = "from torch.utils.cpp_extension import BuildExtension\ncmdclass = {'build_ext': BuildExtension.with_options(use_ninja=False)}\n"
    archive = write_archive(tmp_path / "ops-1.0.tar.gz", {"ops-1.0/setup.py": setup})
    assert torchenv.turns_ninja_off(archive) and not torchenv.turns_ninja_off(torchop_sdist(tmp_path / "s"))
    cpu = torchenv.plan(CPU311, "bookworm-python", "torch==2.13.0+cpu", "d" * 64, (), jobs=3, ninja_off=True)
    cuda = torchenv.plan(Target("cuda", "12.6", "2.13.0", "3.11"), "rt", "torch==2.13.0+cu126", "a" * 64, (), jobs=3, ninja_off=True)
    assert (cpu.parallel_extensions, cuda.parallel_extensions) == (3, 0)
    (tmp_path / "env").mkdir()
    script = builder.torch_script("python3.11", archive.name, builder.AgainstTorch(cpu, [], [], tmp_path), tmp_path / "env")
    assert "export DIST_EXTRA_CONFIG=/env/distutils.cfg" in script
    assert script.index('export PATH="/tmp/venv/bin:$PATH"') < script.index("pip wheel")  # where the venv's ninja is
    assert (tmp_path / "env" / "distutils.cfg").read_text().split() == ["[build_ext]", "parallel", "=", "3"]


# ----- a real extension, locked, built against the real CPU torch, imported and called ---------------
@pytest.fixture(scope="module")
def built(tmp_path_factory, docker_client, docker_engine, debian_python_image, cpu_torch_wheel):
    root = tmp_path_factory.mktemp("torchext")
    archive = torchop_sdist(root / "archives")
    env = {
        "BUNDLER_INDEX_MAP": f"https://download.pytorch.org/whl={real_torch_index(root / 'torchindex', cpu_torch_wheel)} "
        f"https://ops.example/simple={local_index(root / 'ops', archive)}",
        "BUNDLER_CACHE_DIR": str(root / "cache"),
    }
    requirements = "--extra-index-url https://ops.example/simple\ntorch==2.13.0\ntorchop\n"
    project = torch213_project(root / "p", requirements, debian_python_image)
    locked = run_cli("lock", str(project), "--cpu", "--json", env=env)
    assert locked.returncode == 0, locked.stderr[-3000:]
    tag = f"bundler-test/torchext-{uuid.uuid4().hex[:8]}:1"
    done, data = build_fresh(docker_engine, project, "--tag", tag, env=env, cache=root / "cache")
    try:
        yield project, json.loads(locked.stdout), done, data, tag, env
    finally:
        for reference in (tag, tag.replace(":1", ":2"), (data.get("context") or {}).get("deps_image")):
            if reference:
                remove_tag(docker_engine, reference)


@pytest.mark.docker
@pytest.mark.slow
def test_an_archive_whose_build_imports_torch_is_locked_with_its_reason_and_its_own_hash(built):
    project, locked, *_ = built
    (item,) = locked["source_builds"]
    assert (item["name"], item["sdist"], item["build_imports_torch"]) == ("torchop", "torchop-0.1.tar.gz", True)
    assert item["why"].startswith(REASON)
    lock_text = (project / "requirements-rebuild.txt").read_text()
    assert f"--hash=sha256:{item['sdist_sha256']}" in lock_text and "typing-extensions==" in lock_text


@pytest.mark.docker
@pytest.mark.slow
def test_the_extension_is_built_against_the_targets_torch_imported_and_called_in_the_image(built):
    _, _, done, data, tag, _ = built
    assert done.returncode == 0, done.stderr[-4000:]
    assert "against torch==2.13.0+cpu (build isolation off, MAX_JOBS=" in done.stderr
    assert data["smoke_test"]["imports"]["failures"] == []
    called = subprocess.run(
        ["docker", "run", "--rm", "--network", "none", "--entrypoint", "python", tag, "-c",
         "import torch, torchop; print(torchop.scaled_add(torch.ones(3), torch.arange(3.0), 2.0).tolist())"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert called.returncode == 0, called.stderr[-2000:]
    assert called.stdout.strip().splitlines()[-1] == "[1.0, 3.0, 5.0]"


@pytest.mark.docker
@pytest.mark.slow
def test_a_second_build_takes_the_extension_from_the_cache_keyed_by_the_torch_wheel(built, cpu_torch_wheel):
    import hashlib

    project, _, _, _, tag, env = built
    (record_path,) = list((Path(env["BUNDLER_CACHE_DIR"]) / "builds").rglob("*.json"))
    record = json.loads(record_path.read_text())
    torch_sha = hashlib.sha256(cpu_torch_wheel.read_bytes()).hexdigest()
    assert record["file"].startswith("torchop-0.1-cp311-cp311-linux_x86_64") and f"torch==2.13.0+cpu sha256:{torch_sha}" in record["key"]
    again = run_cli("build", str(project), "--tag", tag.replace(":1", ":2"), env=env)
    assert again.returncode == 0, again.stderr[-2000:]
    assert "Building a wheel" not in again.stderr
    assert list((Path(env["BUNDLER_CACHE_DIR"]) / "builds").rglob("*.json")) == [record_path]


# ----- at lock time, the archive's metadata prepared with the Target's torch (torchprobe.py) ------------
def _ops_index(env: dict) -> str:
    return env["BUNDLER_INDEX_MAP"].split("https://ops.example/simple=")[1].split()[0]


@pytest.mark.docker
@pytest.mark.slow
def test_a_cuda_only_kernel_is_refused_at_lock_time_on_a_cpu_target_with_its_own_words(built, tmp_path, debian_python_image):
    *_, env = built  # its lock made the probe venv with the real CPU torch: this one starts one container
    add_to_index(_ops_index(env), other_sdist(tmp_path / "a", "cudaop", CUDA_ONLY_SETUP), "cudaop")
    project = torch213_project(tmp_path / "p", "--extra-index-url https://ops.example/simple\ntorch==2.13.0\ncudaop\n", debian_python_image)
    locked = run_cli("lock", str(project), "--cpu", env=env)
    assert locked.returncode != 0
    message = " ".join(locked.stderr.split())
    assert "cudaop==0.1 cannot be built for torch 2.13.0 for cpu" in message and "needs nvcc or hipcc" in message
    assert "CUDA_HOME is not set and torch found no CUDA toolkit" in message  # its own words
    assert "Lock for a CUDA or ROCm Target" in message and "oosen" not in message and "Nothing was written." in message
    assert not (project / "requirements-rebuild.txt").exists()


@pytest.mark.docker
@pytest.mark.slow
def test_dependencies_only_its_setup_computes_are_read_from_its_metadata_prepared_with_torch(built, tmp_path, debian_python_image):
    *_, env = built
    add_to_index(_ops_index(env), other_sdist(tmp_path / "a", "dynop", DYNAMIC_SETUP), "dynop")
    project = torch213_project(tmp_path / "p", "--extra-index-url https://ops.example/simple\ntorch==2.13.0\ndynop\n", debian_python_image)
    locked = run_cli("lock", str(project), "--cpu", "--json", env=env)
    assert locked.returncode == 0, locked.stderr[-3000:]
    lock_text = (project / "requirements-rebuild.txt").read_text()
    assert "dynop==0.1" in lock_text and "six==" in lock_text and "via dynop" in lock_text
    assert "metadata prepared with the Target's torch installed" in locked.stderr + locked.stdout


def test_the_probe_prepares_metadata_as_the_build_will_run_and_names_a_cuda_refusal(tmp_path):
    from bundler.lock import torchprobe

    site = torchprobe.ProbeSite(None, "base", "sha256:ab", "3.11", "torch==2.13.0+cpu", ["--index-url", "file:///i"], {}, {}, tmp_path)
    other = torchprobe.ProbeSite(None, "base", "sha256:ab", "3.11", "torch==2.12.0+cpu", ["--index-url", "file:///i"], {}, {}, tmp_path)
    assert site.venv_key != other.venv_key  # one venv per torch pin, base image and indexes
    script = torchprobe.probe_script(site, "x-1.0.tar.gz", ("setuptools>=64", "cython<3"), {"FORCE_CUDA": "0"})
    assert "--no-build-isolation" in script and "--dry-run" in script and "--report /probe/report.json" in script
    assert "--target /tmp/build-requires" in script and "'cython<3'" in script and "setuptools>=64" not in script
    assert "export FORCE_CUDA=0" in script and "torch==2.13.0+cpu" in script
    assert f"export PATH=/cache/torchprobe-{site.venv_key}/bin:$PATH" in script  # a setup that runs `pip` gets the venv's
    log = "bundler: preparing metadata with torch 2.13.0+cpu\n  RuntimeError: nvcc was not found.\nerror: metadata-generation-failed\n"
    cuda = torchprobe.refusal("flashy", "2.0", CPU311, site, log, 1)
    assert isinstance(cuda, LockError) and "nvcc or hipcc" in cuda.message and "RuntimeError: nvcc was not found." in cuda.message
    plain = torchprobe.refusal("flashy", "2.0", CPU311, site, log.replace("nvcc", "cmake"), 1)
    assert "could not be prepared even with torch==2.13.0+cpu" in plain.message and "cmake was not found" in plain.message
    assert "oosen" not in (plain.hint or "") + (cuda.hint or "")
    sources = {"k-1.0/setup.py": "import torch\n", "k-1.0/csrc/scan.cu": "", "k-1.0/csrc/a.cuh": ""}
    kernels = write_archive(tmp_path / "k-1.0.tar.gz", sources)
    quiet = "bundler: preparing metadata with torch 2.13.0+cpu\n  NameError: name 'bare_metal_version' is not defined\n"
    assert "nvcc" not in quiet and "holds 2 CUDA sources" in torchprobe.refusal("k", "1.0", CPU311, site, quiet, 1, kernels).message
    assert "could not be prepared" in torchprobe.refusal("k", "1.0", CPU311, site, quiet, 1, None).message
    fetcher = write_archive(tmp_path / "f-1.0.tar.gz", {"f-1.0/setup.py": "from torch.utils.cpp_extension import CUDAExtension\n"})
    assert "declares a CUDAExtension" in torchprobe.refusal("f", "1.0", CPU311, site, quiet, 1, fetcher).message
    # kernels beside a CPU route (MinkowskiEngine's CPU_ONLY, PyG's CppExtension): the failure is not the missing nvcc
    either = write_archive(
        tmp_path / "m-1.0.tar.gz", {"m-1.0/setup.py": "if CPU_ONLY:\n    Extension = CppExtension\n", "m-1.0/src/k.cu": ""}
    )
    other_cause = torchprobe.refusal("m", "1.0", CPU311, site, quiet, 1, either)
    assert "could not be prepared" in other_cause.message and "nvcc or hipcc" not in other_cause.message
    setup = torchprobe.refusal("flashy", "2.0", CPU311, site, "ERROR: No matching distribution found for torch==2.13.0+cpu", 1)
    assert "probe venv with torch==2.13.0+cpu could not be made" in setup.message


SKIMAGE_LOG = """\
  Downloading skimage-0.0.tar.gz (757 bytes)
  error: subprocess-exited-with-error
  × Getting requirements to build wheel did not run successfully.
  ╰─> [3 lines of output]

      *** Please install the `scikit-image` package (instead of `skimage`) ***

      [end of output]
  note: This error originates from a subprocess, and is likely not a problem with pip.
pip._internal.exceptions.FailedToPrepareCandidate: Failed to build 'skimage' when getting requirements to build wheel
"""
MMCV_LOG = """\
  Downloading mmcv-2.0.1.tar.gz (469 kB)
  ╰─> [4 lines of output]
      Traceback (most recent call last):
        File "/tmp/pip-build-env/overlay/_in_process.py", line 406, in <module>
          main()
        File "<string>", line 5, in <module>
      ModuleNotFoundError: No module named 'pkg_resources'
      [end of output]
ERROR: Failed to build 'mmcv' when getting requirements to build wheel
"""


def test_an_archive_that_fails_to_give_its_requirements_is_refused_in_its_own_words_not_as_a_conflict(tmp_path, monkeypatch):
    from types import SimpleNamespace

    monkeypatch.setenv("BUNDLER_INDEX_MAP", f"https://pypi.org/simple={tmp_path.as_uri()}")  # PyPI lists neither: no release named

    from bundler.lock.piplog import prepare_failure, unprepared

    assert prepare_failure("ERROR: Cannot install numpy==1 and numpy==2") is None
    name, version, output = prepare_failure(SKIMAGE_LOG)
    assert (name, version) == ("skimage", "0.0") and output == "*** Please install the `scikit-image` package (instead of `skimage`) ***"
    spec = SimpleNamespace(target=CPU311)
    error = unprepared(spec, name, version, output)
    assert "skimage==0.0 cannot be resolved for torch 2.13.0 for cpu" in error.message and "instead of `skimage`" in error.message
    assert "oosen" not in (error.hint or "") and "not at fault" in (error.hint or "")
    mmcv = unprepared(spec, *prepare_failure(MMCV_LOG))
    assert "mmcv==2.0.1" in mmcv.message and "imports pkg_resources" in mmcv.message and "setuptools<82" in mmcv.message
    assert "Traceback" not in mmcv.message and "main()" not in mmcv.message
    assert "download.openmmlab.com/mmcv/dist/cpu/torch2.13/index.html" in (mmcv.hint or "")


def test_bindings_that_build_only_at_the_system_librarys_release_name_its_package_and_release(tmp_path, monkeypatch):
    from types import SimpleNamespace

    from bundler.lock.piplog import unprepared

    monkeypatch.setenv("BUNDLER_INDEX_MAP", f"https://pypi.org/simple={tmp_path.as_uri()}")
    output = "WARNING: numpy not available!  Array support will not be enabled\nerror in GDAL setup command: use_2to3 is invalid."
    error = unprepared(SimpleNamespace(target=CPU311), "GDAL", "3.0.4", output)
    assert "use_2to3 is invalid" in error.message
    assert 'system_packages = ["libgdal-dev"]' in (error.hint or "") and "pin `GDAL==3.6.2`" in (error.hint or "")
    other = unprepared(SimpleNamespace(target=CPU311), "oldpkg", "1.0", "error: use_2to3 is invalid.")
    assert "libgdal-dev" not in (other.hint or "")


def test_a_failed_first_lock_does_not_speak_of_a_previous_lock(tmp_path, indexed):
    from bundler.lock.run import run_lock
    from bundler.target.bundle import load_bundle

    project = cpu_project(tmp_path / "p", "torch==2.9.1\njinja2<1\n")
    with pytest.raises(LockError) as raised:
        run_lock(load_bundle(project))
    assert "jinja2" in raised.value.message and "previous lock" not in (raised.value.hint or "")
    assert (raised.value.hint or "").endswith("Nothing was written.") and not (project / "requirements-rebuild.txt").exists()


def test_a_failed_build_against_torch_shows_the_packages_own_errors_and_the_routes(tmp_path):
    from bundler.image import builder

    log = (
        "bundler: building against torch 2.13.0+cpu with MAX_JOBS=2\n"
        "  building 'torchop._C' extension\n"
        "  torchop/op.cpp:3:10: fatal error: cuda_runtime.h: No such file or directory\n"
        "  compilation terminated.\n"
        "  error: command '/usr/bin/g++' failed with exit code 1\n"
        "  error: subprocess-exited-with-error\n"
        "  note: This error originates from a subprocess, and is likely not a problem with pip.\n"
        "ERROR: Failed building wheel for torchop\n"
    )
    plan = torchenv.plan(CPU311, "bookworm-python", "torch==2.13.0+cpu", "d" * 64, (), jobs=2)
    against = builder.AgainstTorch(plan, [], [], tmp_path)
    error = builder.build_failure("torchop", "0.1", tmp_path / "torchop-0.1.tar.gz", 1, log, against)
    assert "fatal error: cuda_runtime.h" in error.message and "g++' failed" in error.message
    assert "subprocess-exited-with-error" not in error.message and "nvcc or hipcc" in error.message
    hint = error.hint or ""
    assert "CUDA or ROCm Target" in hint and "publishes a wheel for torch==2.13.0+cpu" in hint and "oosen" not in hint
    late = builder.build_failure("torchop", "0.1", tmp_path / "torchop-0.1.tar.gz", -1, "  torchop: compiled 3 of 9\n", against)
    assert "ran past its time limit" in late.message and "BUNDLER_WHEEL_BUILD_TIMEOUT" in (late.hint or "")


NINJA_LOG = """\
bundler: building against torch 2.13.0+cpu with MAX_JOBS=2
  running build_ext
  [1/2] c++ -MMD -MF /tmp/pip-req-build-x1/build/temp.linux-x86_64-cpython-311/csrc/cpu/scatter_cpu.o.d -pthread \
-I/tmp/venv/lib/python3.11/site-packages/torch/include -c -c /tmp/pip-req-build-x1/csrc/cpu/scatter_cpu.cpp \
-o /tmp/pip-req-build-x1/build/temp.linux-x86_64-cpython-311/csrc/cpu/scatter_cpu.o -O3 -DTORCH_EXTENSION_NAME=_scatter_cpu
  [2/2] c++ -MMD -pthread -c /tmp/pip-req-build-x1/csrc/scatter.cpp -o /tmp/pip-req-build-x1/build/scatter.o -O3
  x86_64-linux-gnu-g++ -pthread -shared /tmp/pip-req-build-x1/build/scatter.o -o build/lib/torch_scatter/_scatter_cpu.so
  g++ -pthread -fPIC -I/tmp/venv/include -c csrc/sparse.cpp -o build/sparse.o
  /tmp/pip-req-build-x1/csrc/sparse.cpp:12:5: error: 'Tensor' does not name a type
  /tmp/pip-req-build-x1/csrc/sparse.cpp:14:1: error: expected declaration
"""


def test_a_torch_build_says_each_compile_step_and_the_link_with_the_seconds_since_it_began():
    from bundler.image.builder import CompileProgress

    said: list[str] = []
    ticks = iter(range(0, 100, 10))
    progress = CompileProgress("torch-scatter", said.append, clock=lambda: float(next(ticks)))
    for start in range(0, len(NINJA_LOG), 37):  # the engine's frames cut lines anywhere
        progress(NINJA_LOG[start : start + 37])
    assert said == [
        "  torch-scatter: torch and the build requirements installed (10 s); compiling…",
        "  torch-scatter: compiled 1 of 2: csrc/cpu/scatter_cpu.cpp (20 s)",
        "  torch-scatter: compiled 2 of 2: csrc/scatter.cpp (30 s)",
        "  torch-scatter: linking (40 s)",
        "  torch-scatter: compiling csrc/sparse.cpp (file 1, 50 s)",
        "  torch-scatter: the compiler reports an error (60 s): csrc/sparse.cpp:12:5: error: 'Tensor' does not name a type",
    ]


def test_the_compiler_lines_a_verbose_build_prints_are_not_taken_for_its_errors():
    from bundler.image.builder import own_lines

    log = NINJA_LOG.split("  /tmp")[0].replace("-O3", "-O3 -Wno-error=deprecated") + (
        "  FAILED: /tmp/pip-req-build-x1/build/scatter.o\n"
        "  c++ -MMD -pthread -Wno-error=deprecated -c /tmp/pip-req-build-x1/csrc/scatter.cpp -o /tmp/pip-req-build-x1/build/scatter.o\n"
        "  /tmp/pip-req-build-x1/csrc/scatter.cpp:12:5: error: 'Tensor' does not name a type\n"
        "  ninja: build stopped: subcommand failed.\n"
        "  RuntimeError: Error compiling objects for extension\n"
    )
    lines = own_lines(log).splitlines()
    assert lines[0].endswith("error: 'Tensor' does not name a type") and "RuntimeError: Error compiling objects for extension" in lines[1]
    assert not any("-Wno-error" in line for line in lines)


def test_a_probe_whose_setup_imports_a_dropped_module_runs_again_with_the_release_that_ships_it(tmp_path, monkeypatch):
    from types import SimpleNamespace

    monkeypatch.setenv("BUNDLER_CACHE_DIR", str(tmp_path / "cache"))
    scripts = []

    class Engine:  # the engine's side: the first run fails as MinkowskiEngine's setup does under NumPy 2, the second passes
        def run(self, spec, timeout):
            scripts.append(spec.command[-1])
            if len(scripts) == 1:
                return SimpleNamespace(
                    exit_code=1,
                    output="bundler: preparing metadata with torch 2.13.0+cpu\nModuleNotFoundError: No module named 'numpy.distutils'\n",
                )
            probe = next(m.source for m in spec.mounts if m.target == "/probe")
            report = {"install": [{"metadata": {"requires_dist": ["numpy"]}}]}
            (Path(probe) / "report.json").write_text(json.dumps(report))
            return SimpleNamespace(exit_code=0, output="bundler: preparing metadata with torch 2.13.0+cpu\n")

    site = torchprobe.ProbeSite(Engine(), "base", "sha256:ab", "3.11", "torch==2.13.0+cpu", ["--index-url", "file:///i"], {}, {}, tmp_path)
    setup = "import numpy\nif True:\n    import numpy.distutils.system_info\n"
    archive = write_archive(tmp_path / "blasy-1.0.tar.gz", {"blasy-1.0/setup.py": setup})
    assert torchprobe.prepared_requirements(site, archive, "cd" * 32, "blasy", "1.0", CPU311) == ["numpy"]
    assert len(scripts) == 2 and "'numpy<2'" not in scripts[0] and "'numpy<2'" in scripts[1]


def test_with_system_packages_a_compiling_archive_is_probed_in_the_builder_image_its_wheel_builds_in(tmp_path, monkeypatch):
    import tarfile
    from types import SimpleNamespace

    from bundler.engine import BaseImage

    monkeypatch.setenv("BUNDLER_CACHE_DIR", str(tmp_path / "cache"))
    ran, built = [], []

    class Engine:  # no builder image yet: it is built once, then the probe runs in it
        def image(self, tag):
            return SimpleNamespace(id="sha256:builder") if built else None

        def build(self, context, *, on_line, network_mode, tag):
            built.append(tarfile.open(fileobj=context).extractfile("Dockerfile").read().decode())
            return "sha256:builder"

        def run(self, spec, timeout):
            ran.append(spec.image)
            probe = next(m.source for m in spec.mounts if m.target == "/probe")
            (Path(probe) / "report.json").write_text(json.dumps({"install": [{"metadata": {"requires_dist": ["numpy"]}}]}))
            return SimpleNamespace(exit_code=0, output="")

    base = BaseImage("python:3.11-slim", "sha256:base", "", 0)
    arguments = (Engine(), "base", "sha256:base", "3.11", "torch==2.13.0+cpu", ["--index-url", "file:///i"], {}, {}, tmp_path)
    site = torchprobe.ProbeSite(*arguments, base=base, system_packages=("libopenblas-dev",))
    compiled = write_archive(tmp_path / "blasy-1.0.tar.gz", {"blasy-1.0/setup.py": "", "blasy-1.0/src/blas.cpp": ""})
    pure = write_archive(tmp_path / "plain-1.0.tar.gz", {"plain-1.0/setup.py": ""})
    assert torchprobe.prepared_requirements(site, compiled, "cd" * 32, "blasy", "1.0", CPU311) == ["numpy"]
    assert torchprobe.prepared_requirements(site, pure, "ef" * 32, "plain", "1.0", CPU311) == ["numpy"]
    assert ran == ["sha256:builder", "sha256:base"] and len(built) == 1
    assert "build-essential libopenblas-dev pkg-config" in built[0]  # the bundle's headers beside the compilers
    without = torchprobe.ProbeSite(*arguments, base=base)  # no system packages: the base image, as before
    assert torchprobe.prepared_requirements(without, compiled, "ab" * 32, "blasy", "1.0", CPU311) == ["numpy"]
    assert ran[-1] == "sha256:base" and len(built) == 1


def test_a_placeholder_packages_notice_of_what_replaces_it_is_kept_among_its_own_lines():
    from bundler.lock.torchbuild import own_lines

    log = (
        "  Preparing metadata (pyproject.toml) did not run successfully.\n  exit code: 1\n"
        "  The 'oldname' PyPI package is deprecated, use 'new-name'\n  rather than 'oldname' for pip commands.\n\n"
        "  Here is how to fix this error in the main use cases:\n"
        + "".join(f"  - step {n} of what to do in a setup file or a lock\n" for n in range(6))
        + "  More information is available at the project's page\n"
    )
    lines = own_lines(log).splitlines()
    assert "'oldname' PyPI package is deprecated, use 'new-name'" in lines[0] and "rather than 'oldname'" in lines[1]


def test_torchs_headers_refusing_an_older_cxx_standard_name_the_standard_not_a_missing_cuda_compiler(tmp_path):
    from bundler.image import builder

    plan = torchenv.TorchBuildPlan("python:3.11-slim", False, "torch==2.13.0+cpu", "ab" * 32)
    against = builder.AgainstTorch(plan, [], [], tmp_path)
    log = (
        "  No CUDA runtime is found, using CUDA_HOME=None\n  building 'chamfer._C' extension\n"
        "  /tmp/venv/lib/python3.11/site-packages/torch/include/torch/all.h:5:2: error: #error C++17 or later compatible "
        "compiler is required to use PyTorch.\n  error: command '/usr/bin/gcc' failed with exit code 1\n"
    )
    error = builder.build_failure("chamfer", "1.0.0", tmp_path / "chamfer-1.0.0.tar.gz", 1, log, against)
    assert "torch==2.13.0+cpu's headers need C++17" in error.message and "nvcc" not in error.message
    assert error.hint.startswith("Pin a later release of chamfer, one that compiles with C++17")
    other = log.replace("#error C++17 or later compatible compiler is required to use PyTorch.", "'at::Tensor' was not declared")
    cuda = builder.build_failure("chamfer", "1.0.0", tmp_path / "chamfer-1.0.0.tar.gz", 1, other, against)
    assert "needs nvcc or hipcc" in cuda.message  # without that line, the CUDA route stands


# ----- an archive asking for an older C++ standard than torch's headers: refused in seconds, naming a later release ---
CHAMFER_SETUP = """\
from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CppExtension

setup(
    name="chamferish",
    ext_modules=[CppExtension("chamferish._C", ["chamferish/ext.cpp"], extra_compile_args={"cxx": ["{flag}"]})],
    cmdclass={"build_ext": BuildExtension},
)
"""


def _standard_sdist(folder: Path, version: str, files: dict[str, str]) -> Path:
    stem = f"chamferish-{version}"
    contents = {
        f"{stem}/PKG-INFO": f"Metadata-Version: 2.1\nName: chamferish\nVersion: {version}\n",
        **{f"{stem}/{k}": v for k, v in files.items()},
    }
    folder.mkdir(parents=True, exist_ok=True)
    return write_archive(folder / f"{stem}.tar.gz", contents)


@pytest.mark.parametrize(
    "files, asked",
    [
        ({"setup.py": CHAMFER_SETUP.replace("{flag}", "-std=c++14")}, ("setup.py", "-std=c++14")),
        ({"setup.py": CHAMFER_SETUP.replace("{flag}", "-std=gnu++1y")}, ("setup.py", "-std=gnu++1y")),
        ({"CMakeLists.txt": "project(x)\nset(CMAKE_CXX_STANDARD 14)\n"}, ("CMakeLists.txt", "CMAKE_CXX_STANDARD 14")),
        (
            {"setup.py": "import subprocess\nsubprocess.check_call(['cmake', '..'])\n", "CMakeLists.txt": "set(CMAKE_CXX_STANDARD 14)\n"},
            ("CMakeLists.txt", "CMAKE_CXX_STANDARD 14"),
        ),
        # PyG's ops: setup.py builds the extension with setuptools; its CMakeLists.txt builds a C++ library apart
        ({"setup.py": CHAMFER_SETUP.replace('"{flag}"', '"-O3"'), "CMakeLists.txt": "set(CMAKE_CXX_STANDARD 14)\n"}, None),
        ({"setup.py": CHAMFER_SETUP.replace("{flag}", "-std=c++11"), "setup.cfg": "[build_ext]\n"}, ("setup.py", "-std=c++11")),
        # a setup.py choosing by torch's version names both: the newer one stands
        ({"setup.py": CHAMFER_SETUP.replace('"{flag}"', '"-std=c++17" if TORCH_2_1 else "-std=c++14"')}, None),
        ({"setup.py": CHAMFER_SETUP.replace("{flag}", "-std=c++17")}, None),
        ({"setup.py": "# torch 1.x needed -std=c++14\n" + CHAMFER_SETUP.replace("{flag}", "-O3")}, None),  # a comment asks nothing
        ({"setup.py": CHAMFER_SETUP.replace("{flag}", "/std:c++20")}, None),
    ],
)
def test_the_cxx_standard_an_archives_build_asks_for_is_read_from_its_build_files(tmp_path, files, asked):
    from bundler.lock.torchbuild import older_standard

    assert older_standard(_standard_sdist(tmp_path, "1.0.0", files), 17) == asked


def test_an_archive_asking_for_cxx14_is_refused_at_lock_naming_the_first_later_release_that_asks_for_cxx17(tmp_path):
    archives = {
        version: _standard_sdist(tmp_path / version, version, {"setup.py": CHAMFER_SETUP.replace("{flag}", flag)})
        for version, flag in (("1.0.0", "-std=c++14"), ("1.0.1", "-std=c++14"), ("1.0.3", "-std=c++17"), ("1.1.0", "-std=c++17"))
    }
    files = [IndexFile(path.name, path.as_uri(), "") for path in archives.values()]
    probe_ran = []
    stand_ins = StandIns(tmp_path / "stand-ins", probe=lambda *args: probe_ran.append(args) or [])
    with pytest.raises(LockError) as raised:
        stand_ins.add("chamferish", "1.0.0", files, SpecifierSet("==1.0.0"), CPU311)
    error = raised.value
    assert "chamferish==1.0.0" in error.message and "its setup.py asks the compiler for -std=c++14" in error.message
    assert "torch 2.13.0's headers need C++17" in error.message
    assert error.hint.startswith("Pin chamferish>=1.0.3 in requirements.in") and not probe_ran  # refused before torch is installed
    only_older = [f for f in files if "1.0.3" not in f.filename and "1.1.0" not in f.filename]
    with pytest.raises(LockError) as none_later:
        StandIns(tmp_path / "again").add("chamferish", "1.0.0", only_older, SpecifierSet("==1.0.0"), CPU311)
    assert none_later.value.hint.startswith("No later release of chamferish on the lock's indexes asks for C++17")
    assert stand_ins.add("chamferish", "1.0.3", files, SpecifierSet(), CPU311).version == "1.0.3"


def test_a_locked_archive_asking_for_an_older_standard_is_refused_by_the_build_before_torch_is_installed(tmp_path, monkeypatch):
    from bundler.errors import BuildError
    from bundler.image import wheelbuild

    sdist = _standard_sdist(tmp_path, "1.0.0", {"setup.py": CHAMFER_SETUP.replace("{flag}", "-std=c++14")})
    monkeypatch.setattr(wheelbuild, "_sdist", lambda item, lock: sdist)
    monkeypatch.setattr(wheelbuild, "download", lambda *args, **kwargs: pytest.fail("the torch wheel was fetched"))
    item = {"name": "chamferish", "version": "1.0.0", "build_imports_torch": True}
    with pytest.raises(BuildError) as raised:
        wheelbuild._torch_plan(item, None, CPU311, None)
    assert "-std=c++14" in raised.value.message and raised.value.hint.startswith("Pin a later release of chamferish")
