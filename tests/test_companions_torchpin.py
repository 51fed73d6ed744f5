"""A package that pins one exact torch (torchtext 0.16.0 requires torch==2.1.0): the conflict says it was made for that
torch and gives the route the companions' refusals give, from what each later release of it asks of torch on a local
PyPI (bundler/lock/companions.py's pinned_torch). The log is a real pip-compile excerpt (tests/data/piplog/SOURCES.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bundler.lock.companions import pinned_torch
from bundler.lock.piplog import resolution_error
from bundler.lock.pypimeta import torch_requirements
from bundler.lock.spec import make_spec
from bundler.target.bundle import Target, load_bundle
from bundler.target.table_file import load_table
from tests.fakeindex import _page, _wheel
from tests.lock_support import make_project

LOG = (Path(__file__).parent / "data" / "piplog" / "torchtext-0.16.0-torch-conflict.txt").read_text()
WHEEL = "cp311-cp311-manylinux1_x86_64"
CPU311 = Target("cpu", "", "2.13.0", "3.11")


@pytest.fixture
def torch_pins(tmp_path, monkeypatch):
    """torchtext whose releases each pin one torch up to 2.3.0; ringpkg whose 1.2 asks torch>=2.5 (and 1.1 has no Linux wheel)."""
    files, pages = tmp_path / "index" / "files", tmp_path / "index" / "pypi" / "simple"
    files.mkdir(parents=True)
    text = [_wheel(files, "torchtext", v, WHEEL, [f"torch=={t}", "tqdm"]) for v, t in (("0.16.0", "2.1.0"), ("0.17.0", "2.2.0"))]
    text.append(_wheel(files, "torchtext", "0.18.0", WHEEL, ["torch==2.3.0"]))
    ring = [_wheel(files, "ringpkg", "1.0", WHEEL, ["torch==2.1.0"]), _wheel(files, "ringpkg", "1.1", "cp311-cp311-win_amd64", [])]
    ring.append(_wheel(files, "ringpkg", "1.2", WHEEL, ['torch>=2.5; platform_system == "Linux"']))
    _page(pages / "torchtext", text)
    _page(pages / "ringpkg", ring)
    monkeypatch.setenv("BUNDLER_INDEX_MAP", f"https://pypi.org/simple={pages.as_uri()}")
    monkeypatch.setenv("BUNDLER_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path


def test_no_release_admits_the_targets_torch_so_the_newest_torch_its_releases_support_is_the_route(torch_pins):
    wanted = torch_requirements("torchtext", "0.16.0", CPU311)
    assert {version: str(spec) for version, spec in wanted.items()} == {"0.17.0": "==2.2.0", "0.18.0": "==2.3.0"}
    why, route = pinned_torch("torchtext", "0.16.0", "2.1.0", wanted, CPU311, load_table(), "requirements.in")
    assert why.startswith("torchtext 0.16.0 was made for torch 2.1.0 (it requires torch==2.1.0), and the Target's torch is 2.13.0")
    assert why.endswith("no release of torchtext admits torch 2.13.0: the newest torch its releases support is 2.3.0")
    assert route.endswith("Lock for that torch with `bundler lock --torch 2.3.0`, or drop torchtext from requirements.in.")


def test_the_first_later_release_that_admits_the_targets_torch_is_named(torch_pins):
    wanted = torch_requirements("ringpkg", "1.0", CPU311)
    assert set(wanted) == {"1.2"}  # 1.1 has no wheel for the Target
    why, route = pinned_torch("ringpkg", "1.0", "2.1.0", wanted, CPU311, load_table(), "requirements.in")
    assert why.endswith("; ringpkg 1.2 requires torch>=2.5, which admits it")
    assert route.startswith("Pin ringpkg==1.2 in requirements.in")


def test_the_conflict_pips_log_reports_ends_in_the_route_not_in_loosen_the_pins(torch_pins):
    # requirements.in naming torchtext itself is refused before resolving now (a companion the table knows); the log
    # stands for any package that pins one torch and comes in through another's requirements
    bundle = load_bundle(make_project(torch_pins / "project", requirements="torch\n", python="3.11"))
    error = resolution_error(make_spec(bundle, bundle.target), LOG, "host", [], kept_pins=False)
    assert "conflicting requirements: torch==2.13.0+cpu (requirements.in) vs torch==2.1.0 (torchtext 0.16.0)" in error.message
    assert "torchtext 0.16.0 was made for torch 2.1.0" in error.message and "Loosen" not in error.hint
    assert "`bundler lock --torch 2.3.0`" in error.hint
