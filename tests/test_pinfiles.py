"""Exact pins read against their release's files before resolving (bundler/lock/pinfiles.py), on a local index:
a pin with no wheel for the Target and no source archive is refused with the others, with the first release that
has a wheel; a pin made for older Pythons that only has a source archive for the Target is named as likely to fail."""

from __future__ import annotations

import pytest

from bundler.errors import LockError
from bundler.lock.pinfiles import check_exact_pins
from bundler.lock.spec import make_spec
from bundler.target.bundle import load_bundle
from tests.deps_support import source_archive
from tests.fakeindex import _page, _wheel
from tests.lock_support import make_project

LINUX = "manylinux2014_x86_64"


@pytest.fixture
def pin_index(tmp_path, monkeypatch):
    """A local PyPI of releases made for older Pythons, and an empty stand-in for PyTorch's index."""
    files, pages = tmp_path / "index" / "files", tmp_path / "index" / "pypi" / "simple"
    files.mkdir(parents=True)
    layout = {
        "wheelsonly": [
            _wheel(files, "wheelsonly", "1.0", f"cp37-cp37m-{LINUX}", []),
            _wheel(files, "wheelsonly", "2.0", f"cp311-cp311-{LINUX}", []),
        ],
        "oldsource": [
            _wheel(files, "oldsource", "1.0", f"cp38-cp38-{LINUX}", []),
            source_archive(files, "oldsource", "1.0"),
            _wheel(files, "oldsource", "1.5", "py3-none-any", []),
        ],
        "pure": [source_archive(files, "pure", "1.0")],
        "fine": [_wheel(files, "fine", "3.0", "py3-none-any", [])],
        "nowhere": [_wheel(files, "nowhere", "1.0", f"cp36-cp36m-{LINUX}", [])],
        "capped": [
            _wheel(files, "capped", "0.53.0", f"cp39-cp39-{LINUX}", []),
            source_archive(files, "capped", "0.53.0"),
            source_archive(files, "capped", "0.56.0"),
            _wheel(files, "capped", "0.57.0", f"cp311-cp311-{LINUX}", []),
        ],
    }
    capped = {name: ">=3.6,<3.10" for name in layout["capped"][:2]} | {layout["capped"][2]: ">=3.7,<3.11"}
    for name, names in layout.items():
        _page(pages / name, names, capped if name == "capped" else None)
    (tmp_path / "empty").mkdir()
    monkeypatch.setenv(
        "BUNDLER_INDEX_MAP", f"https://pypi.org/simple={pages.as_uri()} https://download.pytorch.org/whl={(tmp_path / 'empty').as_uri()}"
    )
    monkeypatch.setenv("BUNDLER_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path


def spec_for(root, requirements: str):
    project = make_project(root / "project", requirements=requirements, python="3.11")
    bundle = load_bundle(project)
    return make_spec(bundle, bundle.target)


def test_every_pin_with_nothing_for_the_target_is_refused_at_once_with_the_first_release_that_fits(pin_index):
    spec = spec_for(pin_index, "torch==2.9.1\nfine==3.0\nwheelsonly==1.0\noldsource==1.0\nnowhere==1.0\npure==1.0\n")
    with pytest.raises(LockError) as raised:
        check_exact_pins(spec)
    message = raised.value.message
    assert message.startswith("2 exact pins of requirements.in cannot be installed for torch 2.9.1 for cpu on Python 3.11")
    assert "requirements.in:3: wheelsonly==1.0 publishes wheels only for CPython ≤ 3.7 and no source archive; the first release " in message
    assert "with a wheel for the Target: wheelsonly==2.0" in message
    assert "requirements.in:5: nowhere==1.0 publishes wheels only for CPython ≤ 3.6 and no source archive; no later release" in message
    assert "Besides, made for older Pythons: requirements.in:4: oldsource==1.0 was made for Python ≤ 3.8" in message
    assert "(oldsource-1.0.tar.gz), likely to fail to build; the first release with a wheel for the Target: oldsource==1.5" in message
    assert "fine" not in message and "pure" not in message  # a fitting wheel; a source-only release is an ordinary source build
    assert "Loosen" not in raised.value.hint and "pin the release named for each" in raised.value.hint.lower()


def test_a_pin_made_for_older_pythons_alone_is_a_note(pin_index):
    said: list[str] = []
    notes = check_exact_pins(spec_for(pin_index, "oldsource==1.0\nfine==3.0\n"), said.append)
    assert len(notes) == 1 and notes[0].startswith("requirements.in:1: oldsource==1.0 was made for Python ≤ 3.8")
    assert said == [f"Note: {notes[0]}."]


def test_a_fitting_pin_is_remembered_so_a_relock_asks_no_index(pin_index, monkeypatch):
    spec = spec_for(pin_index, "fine==3.0\n")
    assert check_exact_pins(spec) == []
    monkeypatch.setenv(
        "BUNDLER_INDEX_MAP",
        f"https://pypi.org/simple=file:///nonexistent https://download.pytorch.org/whl={(pin_index / 'empty').as_uri()}",
    )
    assert check_exact_pins(spec) == []
    unknown = spec_for(pin_index / "other", "wheelsonly==1.0\n")
    assert check_exact_pins(unknown) == []  # no index answers: the resolver will say what is missing in its words


def test_a_pin_whose_requires_python_excludes_the_target_is_refused_with_the_first_release_that_admits_it(pin_index):
    with pytest.raises(LockError) as raised:
        check_exact_pins(spec_for(pin_index, "fine==3.0\ncapped==0.53.0\n"))
    message = raised.value.message
    assert message.startswith("1 exact pin of requirements.in cannot be installed for ")
    assert "requirements.in:2: capped==0.53.0 declares Requires-Python >=3.6,<3.10, which excludes CPython 3.11" in message
    assert "the first release that admits it: capped==0.57.0" in message  # 0.56.0's source archive stops at 3.10 too
    assert "Loosen" not in raised.value.hint


def test_a_release_that_admits_the_target_only_in_its_source_archive_is_not_refused_for_python(pin_index, tmp_path):
    pages = pin_index / "index" / "pypi" / "simple"
    files = pin_index / "index" / "files"
    names = [_wheel(files, "later", "1.0", f"cp39-cp39-{LINUX}", []), source_archive(files, "later", "1.0")]
    _page(pages / "later", names, {names[0]: "<3.10"})
    notes = check_exact_pins(spec_for(tmp_path / "p2", "later==1.0\n"))
    assert len(notes) == 1 and "likely to fail to build" in notes[0] and "Requires-Python" not in notes[0]


def test_a_torch_pin_the_target_replaces_is_named_in_the_refusal_of_the_pins_of_its_time(pin_index):
    with pytest.raises(LockError) as raised:
        check_exact_pins(spec_for(pin_index, "torch==1.7.1\nwheelsonly==1.0\n"))
    message = raised.value.message
    assert "requirements.in:2: wheelsonly==1.0 publishes wheels only for CPython ≤ 3.7" in message
    noted = message.split("Noted before resolving: ")[1]
    assert noted.startswith("requirements.in:1 pins torch==1.7.1; the Target's torch==")
    assert noted.endswith("is used instead (bundle.toml [target]).")
    assert ".." not in message


def test_the_refusal_of_a_vcs_line_names_the_other_lines_pins_that_cannot_be_installed_either(pin_index):
    from bundler.lock.run import run_lock

    project = make_project(pin_index / "project", requirements="torch==2.9.1\ngit+https://example.org/lab/tool.git\nwheelsonly==1.0\n")
    with pytest.raises(LockError) as raised:
        run_lock(load_bundle(project), cpu=True)
    message, hint = raised.value.message, raised.value.hint
    assert message.startswith("requirements.in:2: 'git+https://example.org/lab/tool.git' is a VCS checkout")
    assert "Besides, 1 exact pin of requirements.in cannot be installed" in message
    assert "requirements.in:3: wheelsonly==1.0 publishes wheels only for CPython ≤ 3.7" in message
    assert "pip wheel --no-deps" in hint and "For the pins: Pin the release named for each" in hint
    assert not (project / "requirements-rebuild.txt").exists()
