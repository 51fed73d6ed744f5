"""The engine seam without an engine: which engine bundler picks, and the programs it ships into
a check container (run here from the very archive the container gets)."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import tarfile

import pytest

from bundler.engine import choose, connect
from bundler.engine.podman import ROOT_SOCKET
from bundler.errors import UsageError
from bundler.image.checks import PROGRAMS, Check, programs_archive
from bundler.inimage import libraries, runner
from tests.conftest import REPO


@pytest.mark.parametrize(
    ("flag", "env", "expected"),
    [
        (None, {}, ("docker", "unix:///var/run/docker.sock")),
        (None, {"DOCKER_HOST": "tcp://10.0.0.2:2375"}, ("docker", "tcp://10.0.0.2:2375")),
        (None, {"DOCKER_HOST": "unix:///run/podman/podman.sock"}, ("podman", "unix:///run/podman/podman.sock")),
        (None, {"CONTAINER_HOST": "unix:///tmp/p.sock", "DOCKER_HOST": "unix:///var/run/docker.sock"}, ("podman", "unix:///tmp/p.sock")),
        ("docker", {"CONTAINER_HOST": "unix:///tmp/p.sock"}, ("docker", "unix:///var/run/docker.sock")),
        ("podman", {"CONTAINER_HOST": "unix:///tmp/p.sock"}, ("podman", "unix:///tmp/p.sock")),
        ("podman", {}, ("podman", ROOT_SOCKET)),  # the suite runs as root
    ],
)
def test_the_engine_is_the_flag_else_the_environment(monkeypatch, flag, env, expected):
    monkeypatch.delenv("DOCKER_HOST", raising=False)
    monkeypatch.delenv("CONTAINER_HOST", raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    picked = choose(flag)
    assert (picked.name, picked.address) == expected


def test_an_unknown_engine_name_is_bad_usage():
    with pytest.raises(UsageError, match="--engine 'rkt'"):
        choose("rkt")


def test_ldd_lines_the_driver_provides_or_only_a_fabric_needs_are_told_apart():
    out = "\tlibcuda.so.1 => not found\n\tlibfoo.so.2 => not found\n\tlibc.so.6 => /lib/libc.so.6\n"
    assert libraries.unresolved(out) == ["libfoo.so.2"]
    assert libraries.fabric_only(["libibverbs.so.1", "libmpi.so.40"]) and not libraries.fabric_only(["libibverbs.so.1", "libfoo.so"])


def test_the_runner_takes_each_checks_last_json_line():
    assert runner.finding('noise\n{"a": 1}\n{"b": 2}\n') == {"b": 2}
    assert runner.finding("{not json\n") == {} and runner.finding("[1]\n") == {}


def test_the_shipped_archive_runs_with_python_m_and_no_bundler_on_the_path(tmp_path):
    """What a check container gets, unpacked here and run by an interpreter without site-packages (-S): no bundler but the archive."""
    with tarfile.open(fileobj=io.BytesIO(programs_archive(REPO)), mode="r") as tar:
        names = tar.getnames()
        tar.extractall(tmp_path, filter="data")
    top = PROGRAMS.rsplit("/", 1)[1]
    assert f"{top}/bundler/inimage/runner.py" in names and f"{top}/bdiag/imports.py" in names
    assert f"{top}/bundler/contracts/buildtag.py" in names  # the torch-build rule torchbuild.py applies
    assert f"{top}/bundler/__init__.py" not in names  # `bundler` is a namespace there: none of bundler itself travels
    checks = [
        Check("passes", (sys.executable, "-c", "print('{\"fine\": 1}')")),
        Check("fails", (sys.executable, "-c", "import sys; print('{\"broken\": 2}'); sys.exit(3)")),
    ]
    argv = [sys.executable, "-S", "-m", "bundler.inimage.runner", json.dumps([check.as_dict() for check in checks])]
    done = subprocess.run(argv, cwd=tmp_path, env={"PYTHONPATH": str(tmp_path / top)}, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1, done.stderr
    results = json.loads(done.stdout.splitlines()[-1])
    assert [(r["name"], r["ok"], r["finding"]) for r in results] == [("passes", True, {"fine": 1}), ("fails", False, {"broken": 2})]
    # the import check imports its contracts and reads the table of system libraries from the archive alone
    probe = "from bdiag import imports; print(imports.system_libraries()['libraries']['libGL.so'])"
    done = subprocess.run(
        [sys.executable, "-S", "-c", probe], cwd=tmp_path, env={"PYTHONPATH": str(tmp_path / top)}, capture_output=True, text=True
    )
    assert done.returncode == 0 and done.stdout.strip() == "libgl1", done.stderr


def test_an_engine_over_ssh_is_exit_7_saying_how_to_forward_its_socket(monkeypatch):
    from bundler.errors import EngineError

    monkeypatch.setenv("DOCKER_HOST", "ssh://builder@gpu-box")
    monkeypatch.delenv("CONTAINER_HOST", raising=False)
    with pytest.raises(EngineError) as refused:
        connect()
    assert refused.value.exit_code == 7 and "ssh -NL /tmp/engine.sock:/var/run/docker.sock" in refused.value.message


def test_a_socket_that_answers_nothing_is_exit_7_naming_it(tmp_path, monkeypatch):
    import socket

    from bundler.errors import EngineError

    path = tmp_path / "dead.sock"
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(path))  # bound, never listening: the connection is refused
    monkeypatch.setenv("DOCKER_HOST", f"unix://{path}")
    monkeypatch.delenv("CONTAINER_HOST", raising=False)
    try:
        with pytest.raises(EngineError) as refused:
            connect()
    finally:
        listener.close()
    assert str(path) in refused.value.message and "cannot reach the engine" in refused.value.message


def test_a_push_sends_the_credentials_docker_login_stored(tmp_path):
    import base64

    from bundler.engine.dockerapi import NO_AUTH, registry_auth

    config = tmp_path / "config.json"
    stored = base64.b64encode(b"team:s3cret").decode()
    config.write_text(json.dumps({"auths": {"registry.example.com:5000": {"auth": stored}}}))
    header = json.loads(base64.urlsafe_b64decode(registry_auth("registry.example.com:5000/team/pilot", str(config))))
    assert header == {"username": "team", "password": "s3cret", "serveraddress": "registry.example.com:5000"}
    assert registry_auth("other.example.com/team/pilot", str(config)) == NO_AUTH
    assert registry_auth("team/pilot", str(tmp_path / "absent.json")) == NO_AUTH


def test_a_tcp_engine_speaks_tls_as_the_docker_cli_is_told_to(tmp_path):
    import ssl

    from bundler.engine.wire import Endpoint

    plain = Endpoint.parse("tcp://10.0.0.2:2375", {})
    assert (plain.host, plain.port, plain.tls) == ("10.0.0.2", 2375, None)
    verified = Endpoint.parse("tcp://gpu-box:2376", {"DOCKER_TLS_VERIFY": "1", "DOCKER_CERT_PATH": str(tmp_path)})
    assert verified.tls is not None and verified.tls.verify_mode == ssl.CERT_REQUIRED and verified.tls.check_hostname
    unverified = Endpoint.parse("tcp://gpu-box", {"DOCKER_CERT_PATH": str(tmp_path)})
    assert unverified.port == 2376 and unverified.tls is not None and unverified.tls.verify_mode == ssl.CERT_NONE


@pytest.mark.docker
def test_a_followed_run_still_ends_at_its_timeout_with_the_output_so_far(docker_engine, debian_python_image):
    import time

    from bundler.engine.base import RunSpec

    seen: list[str] = []
    started = time.monotonic()
    ran = docker_engine.run(
        RunSpec(debian_python_image, ["echo begun; sleep 60; echo never"], entrypoint=["/bin/sh", "-c"]), timeout=3, follow=seen.append
    )
    assert ran.timed_out and time.monotonic() - started < 30
    assert "begun" in "".join(seen) and "never" not in ran.output
    quick = docker_engine.run(RunSpec(debian_python_image, ["exit 3"], entrypoint=["/bin/sh", "-c"]), timeout=30, follow=seen.append)
    assert quick.exit_code == 3
