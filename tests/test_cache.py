"""`bundler cache`: the wheel cache and bundler's images listed with sizes, and pruned without
ever touching a file or an image bundler did not make. The engine is shared, so image
removals are narrowed to this test's own images (the command itself runs with --dry-run)."""

from __future__ import annotations

import hashlib
import io
import json
import os
import tarfile
import time
import uuid
from pathlib import Path

import pytest

from bundler.engine import EngineFailure
from bundler.image.cache import listing, prune
from bundler.image.labels import DEPS_LABEL
from bundler.image.wheelbuild import store
from bundler.image.wheelhouse import cache_root
from bundler.pipsettings import cache_dir
from tests.conftest import run_cli

DAY = 86400


def cached(tmp_path: Path, name: str, data: bytes, age_days: float = 0) -> Path:
    source = tmp_path / name
    source.write_bytes(data)
    path = store(source, hashlib.sha256(data).hexdigest())
    then = time.time() - age_days * DAY
    os.utime(path, (then, then))
    return path


def test_wheels_are_listed_and_pruned_by_age_and_foreign_files_stay(tmp_path, monkeypatch):
    monkeypatch.setenv("BUNDLER_CACHE_DIR", str(tmp_path / "cache"))  # the session's cache holds other tests' wheels
    old = cached(tmp_path, "old-1.0-py3-none-any.whl", b"old wheel", age_days=40)
    fresh = cached(tmp_path, "fresh-1.0-py3-none-any.whl", b"fresh wheel")
    foreign = [cache_dir() / "notes.txt", cache_root() / "mine" / "keep.whl", cache_root() / "ab" / "not-a-hash" / "keep.whl"]
    for path in foreign:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"not bundler's")
    listed = run_cli("cache", "--json")
    assert listed.returncode == 0, listed.stderr
    document = json.loads(listed.stdout)
    assert document["wheels"] == {"files": 2, "bytes": len(b"old wheel") + len(b"fresh wheel"), "root": str(cache_root())}
    dry = json.loads(run_cli("cache", "prune", "--wheels", "--older-than", "30", "--dry-run", "--json").stdout)
    assert dry["removed"]["files"] == 1 and old.exists()
    done = run_cli("cache", "prune", "--wheels", "--older-than", "30", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["removed"] == {"files": 1, "file_bytes": len(b"old wheel"), "images": [], "image_bytes": 0}
    assert not old.exists() and not old.parent.exists() and fresh.exists()
    assert all(path.read_bytes() == b"not bundler's" for path in foreign)
    run_cli("cache", "prune", "--wheels")
    assert not fresh.exists() and all(path.exists() for path in foreign)


def _image(engine, dockerfile: str, tag: str) -> str:
    context = io.BytesIO()
    with tarfile.open(fileobj=context, mode="w") as tar:
        info = tarfile.TarInfo("Dockerfile")
        info.size = len(dockerfile.encode())
        tar.addfile(info, io.BytesIO(dockerfile.encode()))
    context.seek(0)
    return engine.build(context, on_line=lambda line: None, tag=tag)


@pytest.mark.docker
def test_bundlers_images_are_listed_and_only_unused_ones_pruned(any_engine):
    engine, debian_python_image = any_engine.engine, any_engine.base
    run = uuid.uuid4().hex[:10]
    used = f"bundler/deps:test-used-{run}"
    unused = f"bundler/deps:test-unused-{run}"
    child = f"bundler-test/child-{run}:1"
    foreign = f"someone/deps-{run}:1"  # carries bundler's label, but bundler did not name it
    tags = [child, used, unused, foreign]
    try:
        ids = {
            used: _image(engine, f'FROM {debian_python_image}\nLABEL {DEPS_LABEL}="used-{run}"\n', used),
            unused: _image(engine, f'FROM {debian_python_image}\nLABEL {DEPS_LABEL}="unused-{run}"\n', unused),
            foreign: _image(engine, f'FROM {debian_python_image}\nLABEL {DEPS_LABEL}="foreign-{run}"\n', foreign),
        }
        _image(engine, f"FROM {used}\nENV CHILD={run}\n", child)
        mine = {image.id: image for image in listing(engine).images if set(image.tags) & {used, unused, foreign}}
        assert set(mine) == {ids[used], ids[unused]}  # the foreign image is not bundler's
        assert mine[ids[used]].in_use == f"{child} is built on it" and mine[ids[unused]].in_use == ""
        dry = json.loads(run_cli("cache", "prune", "--images", "--dry-run", "--json", *any_engine.args, env=any_engine.env).stdout)
        assert unused in [tag for image in dry["removed"]["images"] for tag in image["tags"]]
        assert used not in [tag for image in dry["removed"]["images"] for tag in image["tags"]]
        result = prune(engine, images=True, wheels=False, older_than_days=0, dry_run=False, select=lambda image: image.id in mine)
        assert [image["tags"] for image in result.images] == [[unused]]
        assert [kept["why"] for kept in result.kept] == [f"{child} is built on it"]
        remaining = {tag for image in engine.images() for tag in image.tags}
        assert unused not in remaining and {used, child, foreign} <= remaining
    finally:
        for tag in tags:
            try:
                engine.remove_image(tag, force=True)
            except EngineFailure:  # already removed by the test
                pass
