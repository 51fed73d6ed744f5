"""Pins published only as source archives: found at lock time with the reason, built into
wheels for the Target in a builder container, recorded in the wheel cache and installed with
--require-hashes. The unit tests use a local index; the image test uses the real CPU torch
and pathtools 0.1.2 from PyPI (a source archive only), on the local Debian base image."""

from __future__ import annotations

import hashlib
import io
import json
import subprocess
import tarfile
import uuid
from pathlib import Path

import pytest

from bundler.engine.builderimage import BUILDER_LABEL, builder_dockerfile
from bundler.image.builder import needed_compilers
from bundler.image.labels import LABEL_PREFIX
from bundler.image.wheelbuild import with_wheel_hashes
from bundler.lock.lockfile import Pin, bundle_lock
from bundler.lock.sidecar import Sidecar, sidecar_problems, write_sidecar
from bundler.lock.sources import source_builds, target_tags
from bundler.target.bundle import Target, load_bundle
from tests.build_support import build_fresh
from tests.conftest import run_cli
from tests.deps_support import cpu_project, source_archive, torch213_project
from tests.dockerfile_support import hadolint, keywords, label_pairs, shell_commands, stages
from tests.fakeindex import _page, _wheel, real_torch_index

CPU311 = Target("cpu", "", "2.13.0", "3.11")


# ----- which pins must be built ----------------------------------------------------------------
def test_the_targets_tags_are_cpython_of_its_minor_on_linux_of_its_arch():
    tags = {str(tag) for tag in target_tags(CPU311)}
    assert {"cp311-cp311-manylinux_2_28_x86_64", "cp311-abi3-manylinux2014_x86_64", "py3-none-any", "cp311-none-any"} <= tags
    assert not {"cp312-cp312-manylinux_2_28_x86_64", "cp311-cp311-macosx_11_0_arm64", "cp311-cp311-manylinux_2_28_aarch64"} & tags


@pytest.fixture
def source_index(tmp_path, monkeypatch):
    """A local PyPI: a source-only package, one whose only wheel is for macOS, one with a fitting wheel."""
    files, pages = tmp_path / "index" / "files", tmp_path / "index" / "pypi" / "simple"
    files.mkdir(parents=True)
    layout = {
        "onlysource": [source_archive(files, "onlysource", "1.0")],
        "macwheel": [source_archive(files, "macwheel", "2.0"), _wheel(files, "macwheel", "2.0", "cp311-cp311-macosx_11_0_arm64", [])],
        "fine": [source_archive(files, "fine", "3.0"), _wheel(files, "fine", "3.0", "py3-none-any", [])],
    }
    for name, names in layout.items():
        _page(pages / name, names)
    monkeypatch.setenv("BUNDLER_INDEX_MAP", f"https://pypi.org/simple={pages.as_uri()}")
    digest = {path.name: hashlib.sha256(path.read_bytes()).hexdigest() for path in files.iterdir()}
    return [
        Pin(name, version, tuple(digest[n] for n in layout[name]), "")
        for name, version in (("onlysource", "1.0"), ("macwheel", "2.0"), ("fine", "3.0"))
    ]


def test_pins_without_a_wheel_for_the_target_are_found_with_the_reason(source_index, monkeypatch):
    notes: list[str] = []
    found = {build.name: build for build in source_builds(source_index, ["https://pypi.org/simple"], CPU311, set(), notes)}
    assert set(found) == {"onlysource", "macwheel"} and notes == []
    assert found["onlysource"].why == "only a source archive is published (onlysource-1.0.tar.gz)"
    assert found["macwheel"].why.startswith("none of its 1 wheels fits CPython 3.11 on linux_x86_64 (macwheel-2.0-cp311-cp311-macosx")
    assert found["macwheel"].sdist == "macwheel-2.0.tar.gz" and found["macwheel"].sdist_sha256 in source_index[1].hashes
    monkeypatch.setenv("BUNDLER_INDEX_MAP", "https://pypi.org/simple=file:///nonexistent")  # file names are cached by hash
    again = source_builds(source_index, ["https://pypi.org/simple"], CPU311, set(), notes)
    assert [build.name for build in again] == ["onlysource", "macwheel"] and notes == []


def test_a_pin_whose_files_cannot_be_listed_is_named_not_guessed(source_index, monkeypatch):
    monkeypatch.setenv("BUNDLER_INDEX_MAP", "https://pypi.org/simple=file:///nonexistent")
    notes: list[str] = []
    unknown = Pin("unknownpkg", "1.0", ("ab" * 32,), "")
    assert source_builds([unknown], ["https://pypi.org/simple"], CPU311, set(), notes) == []
    assert notes == ["could not tell whether unknownpkg==1.0 has a wheel for the Target (its files are not all listed)."]


# ----- the builder --------------------------------------------------------------------------------
def archive_with(tmp_path, *names: str):
    path = tmp_path / "pkg-1.0.tar.gz"
    with tarfile.open(path, "w:gz") as archive:
        for name in names:
            info = tarfile.TarInfo(f"pkg-1.0/{name}")
            archive.addfile(info, io.BytesIO(b""))
    return path


@pytest.mark.parametrize(
    "names, packages",
    [
        (["setup.py", "pkg/__init__.py"], []),
        (["setup.py", "src/ext.c"], ["build-essential", "pkg-config"]),
        (["pyproject.toml", "pkg/_fast.pyx"], ["build-essential", "pkg-config"]),
        (["setup.py", "lib/solver.f90"], ["build-essential", "gfortran"]),
        (["pyproject.toml", "rust/Cargo.toml"], ["build-essential", "cargo"]),
    ],
)
def test_the_compilers_come_from_what_the_archive_holds(tmp_path, names, packages):
    assert needed_compilers(archive_with(tmp_path, *names)) == packages


def test_the_builder_adds_compilers_and_pythons_headers_only_when_the_base_lacks_them(tmp_path):
    text = builder_dockerfile("python:3.11-slim-bookworm", "python3.11", ["build-essential", "pkg-config"], "k" * 64)
    (stage,) = stages(text)
    assert keywords(stage) == ["FROM", "RUN", "LABEL"] and stage[0] == ("FROM", "python:3.11-slim-bookworm")
    install = ["DEBIAN_FRONTEND=noninteractive", "apt-get", "install", "-y", "--no-install-recommends"]
    commands = shell_commands(stage[1][1])
    assert commands[:2] == [["apt-get", "update"], [*install, "build-essential", "pkg-config"]]
    test, then, end = commands[2:5]  # Python's headers only when the base lacks them
    assert test[:4] == ["if", "[", "!", "-f"] and test[4].endswith("/Python.h") and test[5] == "]"
    assert then == ["then", *install, "python3.11-dev"] and end == ["fi"]
    assert commands[-1] == ["rm", "-rf", "/var/lib/apt/lists/*"]
    assert label_pairs(stage) == {BUILDER_LABEL: "k" * 64} and BUILDER_LABEL.startswith(LABEL_PREFIX + ".")  # one label family
    linted = hadolint(tmp_path, {"builder": text})
    assert linted.returncode == 0, linted.stdout


# ----- the lock the image installs ----------------------------------------------------------------
def test_a_built_pin_allows_exactly_its_wheels_hash(tmp_path, indexed):
    from bundler.lock.run import run_lock

    project = cpu_project(tmp_path / "p", "torch\njinja2\n")
    run_lock(load_bundle(project), cpu=True)
    lock = bundle_lock(load_bundle(project))
    built = with_wheel_hashes(lock, {"jinja2": ("3.1.6", "f" * 64)})
    pins = {pin.name: pin for pin in built.pins}
    assert pins["jinja2"].hashes == ("f" * 64,) and pins["markupsafe"].hashes == {p.name: p for p in lock.pins}["markupsafe"].hashes
    assert built.install_body.count("--hash=sha256:" + "f" * 64) == 1 and built.indexes == lock.indexes
    wrong = {"name": "jinja2", "version": "3.1.6", "sdist": "jinja2-3.1.6.tar.gz", "sdist_sha256": "0" * 64, "why": "t", "wheels": {}}
    side = Sidecar(lock.header.body_sha256, ["torch", "jinja2"], [wrong])
    assert sidecar_problems(lock, side) == [
        "requirements-rebuild.json names jinja2==3.1.6 (jinja2-3.1.6.tar.gz), which the lock does not pin so"
    ]
    write_sidecar(lock.path, side)
    checked = run_cli("check", str(project), "--json")
    item = next(i for i in json.loads(checked.stdout)["items"] if i["name"] == "lock present and fresh")
    assert item["status"] == "fail" and "does not pin so" in item["detail"]


# ----- a real source-only pin, built into a real image --------------------------------------------
@pytest.fixture(scope="module")
def built(tmp_path_factory, docker_client, docker_engine, debian_python_image, cpu_torch_wheel):
    """pathtools 0.1.2 (PyPI has only its source archive) with the real CPU torch, locked and built."""
    root = tmp_path_factory.mktemp("sdist")
    index = real_torch_index(root / "torchindex", cpu_torch_wheel)
    env = {
        "BUNDLER_INDEX_MAP": f"https://download.pytorch.org/whl={index}",
        "BUNDLER_CACHE_DIR": str(root / "cache"),
        "BUNDLER_WHEELHOUSE_ROUTE": "context",  # a remote engine's route: its install stage is thrown away
    }
    project = torch213_project(root / "p", "torch==2.13.0\npathtools==0.1.2\n", debian_python_image)
    locked = run_cli("lock", str(project), "--cpu", "--json", env=env)
    assert locked.returncode == 0, locked.stderr[-2000:]
    (root / "sidecar-after-lock.json").write_bytes((project / "requirements-rebuild.json").read_bytes())
    tag = f"bundler-test/sdist-{uuid.uuid4().hex[:8]}:1"
    done, data = build_fresh(docker_engine, project, "--tag", tag, env=env, cache=root / "cache")
    try:
        yield project, json.loads(locked.stdout), done, data, tag, env
    finally:
        for reference in (tag, tag.replace(":1", ":2"), (data.get("context") or {}).get("deps_image")):
            if reference:
                try:
                    docker_client.images.remove(reference, force=True)
                except Exception:  # noqa: BLE001 - already gone
                    pass


@pytest.mark.docker
@pytest.mark.slow
def test_a_source_only_pin_is_said_at_lock_time_built_recorded_and_installed_with_hashes(built):
    project, locked, done, data, tag, env = built
    assert [(item["name"], item["why"]) for item in locked["source_builds"]] == [
        ("pathtools", "only a source archive is published (pathtools-0.1.2.tar.gz)")
    ]
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Building a wheel of pathtools==0.1.2 from pathtools-0.1.2.tar.gz" in done.stderr
    cache = Path(env["BUNDLER_CACHE_DIR"])
    after_lock = cache.parent / "sidecar-after-lock.json"
    assert (project / "requirements-rebuild.json").read_bytes() == after_lock.read_bytes(), "the build wrote beside the lock"
    side = json.loads(after_lock.read_text())
    records = list((cache / "builds").rglob("*.json"))
    (record,) = [json.loads(path.read_text()) for path in records]
    assert record["sdist"] == side["source_builds"][0]["sdist"] and record["file"] == "pathtools-0.1.2-py3-none-any.whl"
    imports = data["smoke_test"]["imports"]
    assert imports["failures"] == [] and imports["distributions"] == 2 and imports["imported"] >= 2
    assert data["context"]["route"] == "context" and data["context"]["stage_images_removed"], "the install stage's images were left"
    leftovers = subprocess.run(["docker", "image", "inspect", *data["context"]["stage_images_removed"]], capture_output=True)
    assert leftovers.returncode != 0  # none of them exists any more
    items = json.loads(run_cli("check", str(project), "--json").stdout)["items"]
    assert next(item["status"] for item in items if item["name"] == "lock present and fresh") == "pass"


@pytest.mark.docker
@pytest.mark.slow
def test_the_printed_diagnose_command_passes_as_printed(built):
    _, _, done, data, tag, _ = built
    printed = next(line for line in done.stderr.splitlines() if line.startswith("Diagnostics: "))[len("Diagnostics: ") :]
    assert printed == data["commands"]["diagnose"] and "--shm-size" in printed
    ran = subprocess.run(["bash", "-c", printed], capture_output=True, text=True, timeout=600)
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-2000:]
    assert "verdict: no stage failed" in ran.stdout and "modules import" in ran.stdout


@pytest.mark.parametrize(
    "backend, flags",
    [
        ("cpu", "--shm-size 2g"),
        ("cuda", "--gpus all --shm-size 8g"),
        ("rocm", "--device /dev/kfd --device /dev/dri --group-add video --ipc=host"),
    ],
)
def test_printed_commands_carry_the_backends_flags_and_are_quoted(backend, flags):
    from bundler.image.runcommand import run_commands

    commands = run_commands("reg.example/team's:tag", backend)
    assert commands["run"] == f"docker run --rm {flags} 'reg.example/team'\"'\"'s:tag'"
    assert commands["diagnose"] == commands["run"] + " diagnose"


@pytest.mark.docker
@pytest.mark.slow
def test_a_rebuild_takes_the_wheel_from_the_cache(built):
    project, _, _, _, tag, env = built
    again = run_cli("build", str(project), "--tag", tag.replace(":1", ":2"), env=env)
    assert again.returncode == 0, again.stderr[-2000:]
    assert "Building a wheel" not in again.stderr and "is up to date" in again.stderr
