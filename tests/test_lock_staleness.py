"""A direct dependency the resolver settled on a release years older than the newest the Target could install is a
note after resolving (bundler/lock/staleness.py), from the upload times the index gives (PEP 700)."""

from __future__ import annotations

from bundler.lock.hashes import IndexFile
from bundler.lock.spec import make_spec
from bundler.lock.staleness import stale_notes
from bundler.target.bundle import load_bundle
from tests.lock_support import make_project

LINUX = "manylinux2014_x86_64"


def _file(name: str, when: str, requires: str = "") -> IndexFile:
    return IndexFile(name, f"https://files.example/{name}", "", requires, when)


LISTINGS = {
    "pillow": [
        _file("pillow-6.2.1.tar.gz", "2019-10-21T10:00:00Z"),
        _file(f"pillow-11.0.0-cp311-cp311-{LINUX}.whl", "2024-10-15T10:00:00Z", ">=3.9"),
        _file("pillow-12.0.0rc1.tar.gz", "2025-09-01T10:00:00Z"),
    ],
    "fresh": [_file("fresh-1.0.tar.gz", "2023-01-01T00:00:00Z"), _file("fresh-1.4.tar.gz", "2024-06-01T00:00:00+00:00")],
    "capped": [_file("capped-1.0.tar.gz", "2018-01-01T00:00:00Z"), _file("capped-3.0.tar.gz", "2024-01-01T00:00:00Z")],
    "oldpython": [_file("oldpython-1.0.tar.gz", "2017-01-01T00:00:00Z"), _file("oldpython-2.0.tar.gz", "2024-01-01T00:00:00Z", "<3.10")],
    "untimed": [IndexFile("untimed-1.0.tar.gz", "u", ""), IndexFile("untimed-9.0.tar.gz", "u", "")],
}
BODY = "pillow==6.2.1\n    # via -r requirements.in\nfresh==1.0\ncapped==1.0\noldpython==1.0\nuntimed==1.0\nnumpy==1.0\n"


def test_a_release_years_older_than_one_the_target_and_the_requirements_admit_is_named(tmp_path):
    requirements = "torch==2.9.1\npillow\nfresh\ncapped<2\noldpython\nuntimed\n"
    bundle = load_bundle(make_project(tmp_path / "p", requirements=requirements, python="3.11"))
    asked: list[str] = []

    def listing(name: str) -> list[IndexFile]:
        asked.append(name)
        return LISTINGS.get(name, [])

    notes = stale_notes(BODY, make_spec(bundle, bundle.target), listing)
    assert notes == [
        "pillow==6.2.1 (released 2019) was locked where pillow 11.0.0 (2024) installs on CPython 3.11 and requirements.in "
        "admits it: another requirement holds it back (the lock's `# via` lines name who); pin pillow>=11.0.0 in "
        "requirements.in to see which"
    ]  # fresh: 17 months apart; capped: held back by the user; oldpython: 2.0 excludes 3.11; untimed: no times
    assert "numpy" not in asked  # not a direct dependency
