"""A source build that lacks a system library's headers: the log read for the Debian package, and
[build] system_packages installed in the builder so the one line the hint gives mends the build."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from bundler.contracts import syslibs
from bundler.errors import BuildError
from bundler.fsutil import sha256_file
from bundler.image import builder, wheelbuild
from bundler.target.bundle import load_bundle
from bundler.target.syspackages import build_needs, provides
from tests.deps_support import write_archive

# Lines as the tools print them: gcc, pkg-config (two generations), sh and bash, Python's subprocess.
LOGS = {
    "src/pyaudio/device_api.c:9:10: fatal error: portaudio.h: No such file or directory": [("the header portaudio.h", "portaudio19-dev")],
    "Package 'libavformat', required by 'virtual:world', not found\nPackage 'libavcodec', required by 'virtual:world', not found": [
        ("pkg-config's libavformat", "libavformat-dev"),
        ("pkg-config's libavcodec", "libavcodec-dev"),
    ],
    "Package sndfile was not found in the pkg-config search path.\nNo package 'sndfile' found": [
        ("pkg-config's sndfile", "libsndfile1-dev")
    ],
    "/bin/sh: 1: gdal-config: not found\nFileNotFoundError: [Errno 2] No such file or directory: 'pg_config'": [
        ("the program gdal-config", "libgdal-dev"),
        ("the program pg_config", "libpq-dev"),
    ],
    # setuptools running a program the builder lacks (box2d-py's swig), then old distutils' spelling
    "swigging Box2D/Box2D.i to Box2D/Box2D_wrap.cpp\nerror: command 'swig' failed: No such file or directory": [
        ("the program swig", "swig")
    ],
    "unable to execute '/usr/bin/cmake': No such file or directory": [("the program cmake", "cmake")],
    "x.cpp:3:10: fatal error: Eigen/Core: No such file or directory": [("the header Eigen/Core", "libeigen3-dev")],
    "fatal error: our_own_thing.h: No such file or directory\nerror: command 'gcc' failed": [],
    # Pillow 6's setup, then CMake's two spellings
    "RequiredDependencyException: jpeg\n\nThe headers or library files could not be found for jpeg,\n"
    "a required dependency when compiling Pillow from source.": [("the library jpeg", "libjpeg-dev")],
    "CMake Error at /usr/share/cmake-3.25/Modules/FindPackageHandleStandardArgs.cmake:230 (message):\n"
    "  Could NOT find ZLIB (missing: ZLIB_LIBRARY ZLIB_INCLUDE_DIR)": [("the library ZLIB", "zlib1g-dev")],
    'Could not find a package configuration file provided by "Boost" with any of': [("the library Boost", "libboost-dev")],
    "Could NOT find OurOwnThing (missing: OurOwnThing_DIR)": [],
}


@pytest.mark.parametrize("log, expected", list(LOGS.items()))
def test_what_a_build_log_lacks_is_read_as_the_debian_package_that_has_it(log, expected):
    assert build_needs(log) == expected


def test_the_tables_sections_all_name_debian_packages():
    table = provides()
    names = [package for section in ("headers", "pkgconfig", "build_programs", "build_libraries") for package in table[section].values()]
    assert names and all(syslibs.bundle_line([name]) == f'system_packages = ["{name}"]' for name in names)
    assert all(name == name.lower() and " " not in name for name in names)


def test_the_refusal_gives_the_one_line_with_the_packages_already_listed():
    log = "src/x.c:2:10: fatal error: sndfile.h: No such file or directory\ncompilation terminated."
    error = builder.build_failure("pysnd", "1.0", _path("pysnd-1.0.tar.gz"), 1, log, None, builder.Inputs("requirements.in", ("libgl1",)))
    assert "it needs the header sndfile.h (Debian's libsndfile1-dev), which the builder does not have" in error.message
    assert error.hint.startswith('In bundle.toml\'s [build], system_packages = ["libgl1", "libsndfile1-dev"]: bundler installs them')
    listed = builder.build_failure("pysnd", "1.0", _path("pysnd-1.0.tar.gz"), 1, log, None, builder.Inputs("r.in", ("libsndfile1-dev",)))
    assert "system_packages" not in listed.hint  # already there: the line would not mend it


def test_the_refusal_says_so_when_no_release_has_a_wheel_for_the_target(tmp_path, monkeypatch):
    from tests.deps_support import source_archive
    from tests.fakeindex import _page, _wheel
    from tests.lock_support import make_project

    files, pages = tmp_path / "files", tmp_path / "simple"
    files.mkdir()
    listed = [_wheel(files, "boxsim", "2.3.8", "cp37-cp37m-manylinux1_x86_64", []), source_archive(files, "boxsim", "2.3.8")]
    _page(pages / "boxsim", listed)
    monkeypatch.setenv("BUNDLER_INDEX_MAP", f"https://pypi.org/simple={pages.as_uri()}")
    monkeypatch.setenv("BUNDLER_CACHE_DIR", str(tmp_path / "cache"))
    target = load_bundle(make_project(tmp_path / "p", python="3.11")).target
    log = "swigging Box2D/Box2D.i\nerror: command 'swig' failed: No such file or directory\n"
    inputs = builder.Inputs("requirements.in", (), target)
    error = builder.build_failure("boxsim", "2.3.8", _path("boxsim-2.3.8.tar.gz"), 1, log, None, inputs)
    assert error.hint.startswith('In bundle.toml\'s [build], system_packages = ["swig"]')
    assert "No release of boxsim has a wheel for CPython 3.11" in error.hint and "(its wheels stop at CPython 3.7)" in error.hint
    assert "Use a release of boxsim that publishes a wheel" not in error.hint


def _path(name):
    from pathlib import Path

    return Path("/cache") / name


SETUP = """from setuptools import Extension, setup
setup(name="sndver", version="1.0", ext_modules=[Extension("sndver", ["sndver.c"], libraries=["sndfile"])])
"""
SOURCE = """#include <Python.h>
#include <sndfile.h>
static PyObject *version(PyObject *self, PyObject *args) { return PyUnicode_FromString(sf_version_string()); }
static PyMethodDef methods[] = {{"version", version, METH_NOARGS, ""}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "sndver", NULL, -1, methods};
PyMODINIT_FUNC PyInit_sndver(void) { return PyModule_Create(&module); }
"""


def _sdist(folder):
    files = {"setup.py": SETUP, "sndver.c": SOURCE, "PKG-INFO": "Metadata-Version: 2.1\nName: sndver\nVersion: 1.0\n"}
    return write_archive(folder / "sndver-1.0.tar.gz", {f"sndver-1.0/{name}": text for name, text in files.items()})


@pytest.mark.docker
@pytest.mark.slow
def test_a_build_lacking_headers_is_refused_with_the_line_and_builds_with_it(tmp_path, monkeypatch, docker_engine, debian_python_image):
    from bundler.engine import base_image

    monkeypatch.setenv("BUNDLER_CACHE_DIR", str(tmp_path / "cache"))
    sdist = _sdist(tmp_path)
    digest = sha256_file(sdist)
    wheelbuild.store(sdist, digest)
    item = {"name": "sndver", "version": "1.0", "sdist": sdist.name, "sdist_sha256": digest}
    lock = SimpleNamespace(pins=(), indexes=[])
    base = base_image(docker_engine, debian_python_image)

    def bundle(*packages):
        target = SimpleNamespace(python="3.11", platform="linux_x86_64")
        return SimpleNamespace(target=target, requirements="requirements.in", system_packages=packages)

    with pytest.raises(BuildError) as refused:
        wheelbuild._wheel_for(item, "k1", lock, bundle(), docker_engine, base, lambda line: None)
    assert "the header sndfile.h (Debian's libsndfile1-dev)" in refused.value.message
    assert 'system_packages = ["libsndfile1-dev"]' in refused.value.hint
    wheel, wheel_digest = wheelbuild._wheel_for(item, "k2", lock, bundle("libsndfile1-dev"), docker_engine, base, lambda line: None)
    assert wheel.name.startswith("sndver-1.0-cp311-cp311-linux_x86_64") and sha256_file(wheel) == wheel_digest


# An archive whose build backend reads a system library's development files to give its metadata (GDAL's gdal-config);
# a backend of its own, in the archive, so that its isolated build installs nothing.
METADATA_BACKEND = """import os, subprocess


def _check():
    if subprocess.run(["pkg-config", "--exists", "sndfile"]).returncode != 0:
        raise SystemExit("sndmeta reads libsndfile's development files for its metadata: pkg-config finds no sndfile")


def get_requires_for_build_wheel(config_settings=None):
    _check()
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    _check()
    os.makedirs(os.path.join(metadata_directory, "sndmeta-1.0.dist-info"))
    with open(os.path.join(metadata_directory, "sndmeta-1.0.dist-info", "METADATA"), "w") as out:
        out.write("Metadata-Version: 2.1\\nName: sndmeta\\nVersion: 1.0\\n")
    return "sndmeta-1.0.dist-info"


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    raise SystemExit("only its metadata is read here")
"""
METADATA_PYPROJECT = '[build-system]\nrequires = []\nbuild-backend = "backend"\nbackend-path = ["."]\n'


@pytest.mark.docker
@pytest.mark.slow
def test_an_archive_whose_metadata_needs_the_bundles_system_packages_is_resolved_in_the_builder_image(
    tmp_path, monkeypatch, indexed, docker_engine, debian_python_image
):
    import subprocess

    from bundler.errors import LockError
    from bundler.lock.run import run_lock
    from tests.lock_support import make_project

    if subprocess.run(["pkg-config", "--exists", "sndfile"]).returncode == 0:
        pytest.fail("this host has libsndfile's development files: the test needs a host without them")
    from tests.fakeindex import _page

    monkeypatch.setenv("BUNDLER_CACHE_DIR", str(tmp_path / "cache"))
    archive = {"sndmeta-1.0/pyproject.toml": METADATA_PYPROJECT, "sndmeta-1.0/backend.py": METADATA_BACKEND}
    write_archive(indexed.root / "files" / "sndmeta-1.0.tar.gz", archive)  # on the fake PyPI
    _page(indexed.root / "pypi" / "simple" / "sndmeta", ["sndmeta-1.0.tar.gz"])
    project = make_project(tmp_path / "p", "torch==2.9.1\nsndmeta\n", base_image=debian_python_image)
    with pytest.raises(LockError) as refused:  # no system package declared: the host's own refusal, in the archive's words
        run_lock(load_bundle(project), cpu=True)
    assert "pkg-config finds no sndfile" in refused.value.message
    bundle_toml = project / "bundle.toml"
    bundle_toml.write_text(bundle_toml.read_text().replace("[build]\n", '[build]\nsystem_packages = ["libsndfile1-dev"]\n'))
    result = run_lock(load_bundle(project), cpu=True)
    assert result.resolution.where.startswith("container ") and "sndmeta==1.0" in (project / "requirements-rebuild.txt").read_text()
