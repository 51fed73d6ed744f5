"""A source archive whose metadata step fails with pip's traceback alone (pip-tools lets MetadataGenerationFailed out, with
no "Failed to build" line): named from pip's -v log, refused in its own words with the first release that has a wheel
for the Target, never as a conflict of the pins. Fixtures: real pip-compile log excerpts (tests/data/piplog/SOURCES.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bundler.lock.hashes import IndexFile
from bundler.lock.piplog import metadata_failure, resolution_error
from bundler.lock.resolve import _compile_args, _unnamed_archive
from bundler.lock.sources import wheel_route
from bundler.lock.spec import make_spec
from bundler.pipsettings import host_pip_settings
from bundler.target.bundle import load_bundle
from tests.deps_support import source_archive
from tests.fakeindex import _page, _wheel
from tests.lock_support import make_project

LOGS = Path(__file__).parent / "data" / "piplog"
VERBOSE = (LOGS / "numpy-1.17.1-metadata-verbose.txt").read_text()
QUIET = (LOGS / "numpy-1.17.1-metadata-quiet.txt").read_text()
OWN = "Running from numpy source directory.\n  NameError: name 'CCompiler' is not defined. Did you mean: 'ccompiler'?"


@pytest.fixture
def numpy_spec(tmp_path, monkeypatch):
    """A project pinning numpy==1.17.1, on a local PyPI where 1.17.1 is a source archive and 1.23.2 the first cp311 wheel."""
    files, pages = tmp_path / "index" / "files", tmp_path / "index" / "pypi" / "simple"
    files.mkdir(parents=True)
    names = [source_archive(files, "numpy", "1.17.1"), _wheel(files, "numpy", "1.17.1", "cp37-cp37m-manylinux1_x86_64", [])]
    names += [_wheel(files, "numpy", "1.23.1", "cp310-cp310-manylinux2014_x86_64", [])]
    names += [_wheel(files, "numpy", "1.23.2", "cp311-cp311-manylinux2014_x86_64", [])]
    _page(pages / "numpy", names)
    monkeypatch.setenv("BUNDLER_INDEX_MAP", f"https://pypi.org/simple={pages.as_uri()}")
    bundle = load_bundle(make_project(tmp_path / "project", requirements="numpy==1.17.1\n", python="3.11"))
    return make_spec(bundle, bundle.target)


def test_the_archive_is_named_from_the_verbose_log_with_its_own_error_lines():
    assert metadata_failure(VERBOSE) == ("numpy", "1.17.1", OWN)
    assert metadata_failure("ERROR: Cannot install numpy==1 and numpy==2") is None


def test_a_retired_packages_notice_of_what_replaces_it_comes_before_its_last_lines():
    notice = ["The 'oldname' PyPI package is deprecated, use 'new-name'", "rather than 'oldname' for pip commands.", ""]
    advice = [f"- step {n} of what to do in a setup file or a lock" for n in range(9)]
    block = "\n".join(f"      {line}" for line in notice + advice)
    log = f"Collecting oldname\n  Preparing metadata (setup.py) did not run successfully.\n  [12 lines of output]\n{block}\n"
    log += "  [end of output]\n"
    name, _, own = metadata_failure(log)
    lines = own.splitlines()
    assert name == "oldname" and "is deprecated, use 'new-name'" in lines[0] and "rather than 'oldname'" in lines[1]
    assert lines[-1].strip() == "- step 8 of what to do in a setup file or a lock" and len(lines) == 10


def test_the_quiet_log_names_no_archive_so_resolution_runs_again_with_v(numpy_spec):
    assert metadata_failure(QUIET) == ("", "", OWN)
    assert _unnamed_archive(numpy_spec, QUIET) and not _unnamed_archive(numpy_spec, VERBOSE)
    args = _compile_args(["https://pypi.org/simple"], host_pip_settings(), "/cache", verbose=True)
    assert args[0] == "-v" and "-v" not in _compile_args(["https://pypi.org/simple"], host_pip_settings(), "/cache")


def test_the_refusal_names_the_archive_its_words_and_the_first_release_with_a_wheel(numpy_spec):
    error = resolution_error(numpy_spec, VERBOSE, "host", [], kept_pins=False)
    assert error.message.startswith("numpy==1.17.1 cannot be resolved for torch 2.9.1 for cpu on Python 3.11")
    assert OWN in error.message and "Traceback" not in error.message and "MetadataGenerationFailed" not in error.message
    assert "pin numpy==1.23.2, the first release with a wheel for the Target" in error.hint
    assert "pip wheel --no-deps numpy==1.17.1 -w wheels/" in error.hint and "Loosen" not in error.hint


def test_a_log_that_never_names_the_archive_is_still_no_conflict_of_the_pins(numpy_spec):
    error = resolution_error(numpy_spec, QUIET, "host", [], kept_pins=False)
    assert "does not name the archive" in error.message and OWN in error.message
    assert "not at fault" in error.hint and "Loosen" not in error.hint


def _listed(*filenames: str) -> list[IndexFile]:
    return [IndexFile(name, f"https://files.example/{name}", "") for name in filenames]


@pytest.mark.parametrize(
    ("files", "said"),
    [
        (["w-0.2.5.tar.gz", "w-0.3.0-cp311-cp311-manylinux2014_x86_64.whl"], "pin w==0.3.0, the first release with a wheel"),
        (["w-0.2.5.tar.gz", "w-0.1.0-cp311-cp311-manylinux2014_x86_64.whl"], "pin w==0.1.0, the newest release with a wheel"),
        (
            ["w-0.2.5.tar.gz", "w-0.3.0-cp39-cp39-manylinux2014_x86_64.whl", "w-0.3.1-cp38-cp38-win_amd64.whl"],
            "No release of w has a wheel for CPython 3.11 on linux_x86_64 (its wheels stop at CPython 3.9), so its source build",
        ),
        (["w-0.2.5.tar.gz", "w-0.3.0.tar.gz"], "No release of w publishes a wheel for linux_x86_64, so its source build must succeed"),
        ([], "pin a release of w that publishes a wheel for the Target"),
    ],
)
def test_the_route_offers_a_release_with_a_wheel_only_where_the_index_lists_one(numpy_spec, files, said):
    route = wheel_route("w", "0.2.5", _listed(*files), numpy_spec.target)
    assert said in route
    assert ("No release" in route) == ("No release" in said)


def test_a_log_that_names_the_package_but_not_its_release_takes_requirements_ins_exact_pin(numpy_spec):
    log = (
        "  error: subprocess-exited-with-error\n  Getting requirements to build wheel did not run successfully.\n"
        "  [3 lines of output]\n  RuntimeError: Running from numpy source directory.\n  [end of output]\n"
        "ERROR: Failed to build 'numpy' when getting requirements to build wheel\n"
    )
    error = resolution_error(numpy_spec, log, "host", [], kept_pins=False)
    assert error.message.startswith("numpy==1.17.1 cannot be resolved") and "Running from numpy source directory." in error.message
    assert "pin numpy==1.23.2, the first release with a wheel for the Target" in error.hint
