"""The wheelhouse: the lock's files for the Target, cached by content, hash-checked before use."""

from __future__ import annotations

import subprocess
import sys
import urllib.error
import urllib.request

import pytest

from bundler.errors import BuildError
from bundler.image.serve import WheelhouseServer
from bundler.image.wheelhouse import cache_root, gather
from bundler.lock.lockfile import fresh_lock
from bundler.lock.run import run_lock
from bundler.target.bundle import load_bundle
from bundler.target.versions import platform_tags
from tests.lock_support import make_project


@pytest.fixture
def locked_rocm(tmp_path, fake_index, monkeypatch):
    monkeypatch.setenv("BUNDLER_INDEX_MAP", fake_index.index_map())
    monkeypatch.setenv("BUNDLER_PIP_RETRIES", "0")
    project = make_project(tmp_path / "p", "torch==2.9.1\n", backend="rocm", accelerator="6.4", python="3.11")
    run_lock(load_bundle(project))
    return load_bundle(project)


def test_gather_downloads_the_targets_wheels_once_into_the_shared_cache(locked_rocm, monkeypatch):
    wheels = gather(fresh_lock(locked_rocm), locked_rocm.target)
    names = sorted(wheel.filename for wheel in wheels)
    assert "torch-2.9.1+rocm6.4-cp311-cp311-linux_x86_64.whl" in names
    assert any(name.startswith("pytorch_triton_rocm-") for name in names)
    assert all(wheel.path.is_relative_to(cache_root()) and wheel.sha256 in wheel.path.parent.name for wheel in wheels)
    # second time: everything comes from the cache, so a dead index does not matter
    monkeypatch.setenv(
        "BUNDLER_INDEX_MAP", "https://download.pytorch.org/whl=file:///nonexistent https://pypi.org/simple=file:///nonexistent"
    )
    again = gather(fresh_lock(locked_rocm), locked_rocm.target)
    assert [w.path for w in again] == [w.path for w in wheels]


def test_a_tampered_cached_wheel_stops_the_build_naming_the_file(locked_rocm):
    wheels = gather(fresh_lock(locked_rocm), locked_rocm.target)
    victim = next(w for w in wheels if w.pin.name == "torch")
    original = victim.path.read_bytes()
    victim.path.write_bytes(original + b"tampered")
    try:
        with pytest.raises(BuildError) as caught:
            gather(fresh_lock(locked_rocm), locked_rocm.target)
    finally:
        victim.path.write_bytes(original)  # the cache is shared by the session's other tests
    assert str(victim.path) in caught.value.message
    assert caught.value.path == victim.path


def test_platform_tags_cover_manylinux_and_plain_linux():
    tags = platform_tags("linux_x86_64")
    assert tags[0] == "manylinux_2_35_x86_64" and "manylinux_2_17_x86_64" in tags and tags[-1] == "linux_x86_64"
    assert "manylinux_2_39_x86_64" not in tags  # newer than the oldest supported base's glibc
    assert platform_tags("linux_aarch64")[-1] == "linux_aarch64"


def test_the_loopback_server_serves_the_lock_to_pip_with_hashes_and_nothing_else(locked_rocm, tmp_path):
    lock = fresh_lock(locked_rocm)
    wheels = gather(lock, locked_rocm.target, verify=False)
    with WheelhouseServer(wheels, lock.install_body) as server:
        assert urllib.request.urlopen(server.url + "requirements.txt").read().decode() == lock.install_body
        for path in ("../bundle.toml", "%2e%2e/bundle.toml", "etc/passwd", wheels[0].path.as_posix()):
            with pytest.raises(urllib.error.HTTPError) as refused:
                urllib.request.urlopen(server.url + path)
            assert refused.value.code == 404
        url = server.url.rstrip("/")
        argv = [sys.executable, "-m", "pip", "download", "--no-deps", "--require-hashes", "--no-index", "--find-links", url]
        argv += ["--no-cache-dir", "--dest", str(tmp_path / "out"), "-r", f"{url}/requirements.txt", "--platform", "linux_x86_64"]
        argv += ["--only-binary=:all:", "--python-version", "3.11", "--implementation", "cp"]
        done = subprocess.run(argv, capture_output=True, text=True, env={"PIP_CONFIG_FILE": "/dev/null", "PATH": "/usr/bin:/bin"})
        assert done.returncode == 0, done.stdout + done.stderr
        assert sorted(p.name for p in (tmp_path / "out").iterdir()) == sorted(w.filename for w in wheels)
        assert server.served.bytes == sum(w.size for w in wheels) and server.served.mismatches == []


def test_the_loopback_server_names_a_file_altered_in_the_cache(locked_rocm):
    lock = fresh_lock(locked_rocm)
    wheels = gather(lock, locked_rocm.target, verify=False)
    victim = next(w for w in wheels if w.pin.name == "torch")
    original = victim.path.read_bytes()
    victim.path.write_bytes(original + b"tampered")
    try:
        with WheelhouseServer(wheels, lock.install_body) as server:
            data = urllib.request.urlopen(server.url + urllib.request.quote(victim.filename)).read()
    finally:
        victim.path.write_bytes(original)
    assert data.endswith(b"tampered")
    assert [(wheel.path, len(actual)) for wheel, actual in server.served.mismatches] == [(victim.path, 64)]


def test_a_pin_the_index_has_no_file_of_for_the_target_is_named_with_pips_reason():
    from bundler.errors import ExternalError
    from bundler.image.wheelhouse import _download_error
    from bundler.target.bundle import Target

    log = (
        "ERROR: Ignored the following versions that require a different python version: 4.1.3 Requires-Python >=3.11.5\n"
        "ERROR: Could not find a version that satisfies the requirement soupsieve==4.1.3 (from versions: 2.8)\n"
        "ERROR: No matching distribution found for soupsieve==4.1.3\n"
    )
    target = Target(backend="cpu", accelerator="", torch="2.13.0", python="3.11")
    error = _download_error(log, ["https://pypi.org/simple"], target)
    assert isinstance(error, BuildError) and error.value == "soupsieve==4.1.3"
    assert "need a newer Python than 3.11.0" in error.message and "bundler lock --upgrade" in error.hint
    offline = _download_error("ERROR: Could not install packages due to an OSError: Connection refused\n", ["https://x"], target)
    assert isinstance(offline, ExternalError) and "network" in offline.hint
