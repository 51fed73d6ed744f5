"""A source archive whose setup imports what today's build tools no longer ship (pkg_resources): read and built
again with the release that still ships it as a build constraint, instead of refused."""

from __future__ import annotations

import os
import subprocess
import sys
from types import SimpleNamespace

import pytest

from bundler.contracts.dropped import build_constraint_for
from bundler.fsutil import sha256_file
from bundler.image import wheelbuild
from bundler.lock.resolve import constrained_builds
from tests.deps_support import write_archive

# pip's own words when an isolated build's setup.py imports pkg_resources (setuptools 82 and later)
OLD_SETUP_LOG = """  Getting requirements to build wheel: started
  error: subprocess-exited-with-error
  × Getting requirements to build wheel did not run successfully.
  │ exit code: 1
  ╰─> [4 lines of output]
      Traceback (most recent call last):
        File "<string>", line 2, in <module>
      ModuleNotFoundError: No module named 'pkg_resources'
      [end of output]
"""


def test_a_missing_module_the_table_knows_gives_the_pin_that_ships_it_and_others_give_none():
    assert build_constraint_for(OLD_SETUP_LOG) == "setuptools<82"
    assert build_constraint_for("ModuleNotFoundError: No module named 'torch'") == ""
    assert build_constraint_for("No module named 'pkg_resources.extern'") == "setuptools<82"
    # a submodule its distribution dropped, the distribution kept: numpy.distutils (MinkowskiEngine's BLAS search)
    assert build_constraint_for("ModuleNotFoundError: No module named 'numpy.distutils'") == "numpy<2"
    assert build_constraint_for("No module named 'numpy'") == "" and build_constraint_for("No module named 'numpy_x'") == ""


SETUP = "import pkg_resources\nfrom setuptools import setup\nsetup(name='oldsetup', version='1.0', py_modules=['oldsetup'])\n"


def _sdist(folder):
    files = {"setup.py": SETUP, "oldsetup.py": "VALUE = 1\n", "PKG-INFO": "Metadata-Version: 2.1\nName: oldsetup\nVersion: 1.0\n"}
    return write_archive(folder / "oldsetup-1.0.tar.gz", {f"oldsetup-1.0/{name}": text for name, text in files.items()})


@pytest.mark.slow
def test_the_resolvers_isolated_build_takes_the_constraint_and_reads_the_archive(tmp_path):
    """pip-compile itself, from PyPI's setuptools: refused without the constraint, read with it."""
    sdist = _sdist(tmp_path)
    (tmp_path / "requirements.in").write_text(f"oldsetup @ {sdist.as_uri()}\n")

    def compile_with(env):
        argv = [sys.executable, "-m", "piptools", "compile", "--no-header", "-q", "-o", "out.txt", "requirements.in"]
        return subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, env=os.environ | env)

    plain = compile_with({})
    assert plain.returncode != 0 and build_constraint_for(plain.stdout + plain.stderr) == "setuptools<82"
    constrained = compile_with(constrained_builds(tmp_path, "setuptools<82"))
    assert constrained.returncode == 0, constrained.stderr[-1500:]
    assert "oldsetup @ file://" in (tmp_path / "out.txt").read_text()


@pytest.mark.docker
@pytest.mark.slow
def test_the_builder_builds_such_an_archive_again_with_the_constraint(tmp_path, monkeypatch, docker_engine, debian_python_image):
    from bundler.engine import base_image

    monkeypatch.setenv("BUNDLER_CACHE_DIR", str(tmp_path / "cache"))
    sdist = _sdist(tmp_path)
    digest = sha256_file(sdist)
    wheelbuild.store(sdist, digest)
    item = {"name": "oldsetup", "version": "1.0", "sdist": sdist.name, "sdist_sha256": digest}
    target = SimpleNamespace(python="3.11", platform="linux_x86_64")
    bundle = SimpleNamespace(target=target, requirements="requirements.in", system_packages=())
    said: list[str] = []
    base = base_image(docker_engine, debian_python_image)
    wheel, _ = wheelbuild._wheel_for(item, "k", SimpleNamespace(pins=(), indexes=[]), bundle, docker_engine, base, said.append)
    assert wheel.name == "oldsetup-1.0-py3-none-any.whl"
    assert any("building it again with that constraint" in line for line in said)


def test_a_build_against_torch_installs_the_constraint_over_the_locks_release_in_its_own_environment(tmp_path):
    from bundler.image import builder, torchenv
    from tests.test_torchext import CPU311

    plan = torchenv.plan(CPU311, "local/base:1", "torch==2.13.0+cpu", "a" * 64, ["ninja"])
    against = builder.AgainstTorch(plan, [], ["setuptools==84.2.1"], tmp_path)
    (tmp_path / "env").mkdir()
    steps = builder.torch_script("python3.11", "mmcv-2.0.1.tar.gz", against, tmp_path / "env", "setuptools<82").split("; ")
    install = steps.index("$V -m pip install -q 'setuptools<82'")
    assert steps.index("$V -m pip install -q -c /env/constraints.txt ninja") < install < len(steps) - 1
    assert "setuptools<82" not in builder.torch_script("python3.11", "x.tar.gz", against, tmp_path / "env")
