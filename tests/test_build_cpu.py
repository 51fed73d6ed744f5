"""`bundler build` of the CPU example with real torch (2.13.0+cpu), built once per session.

The wheels are served over loopback to the engine (no wheel committed into any layer),
the dependency checks run once and are recorded on the dependency image, and the image
runs the pilot offline, as a non-root user, within 1.05 × (base + site-packages).
"""

from __future__ import annotations

import hashlib
import io
import json
import tarfile

import pytest

from tests.build_support import BUNDLER_LABELS, OCI, build, layer_names, remove_tag, run_container
from tests.registry import running_registry

pytestmark = [pytest.mark.docker, pytest.mark.slow]


def test_cpu_example_runs_its_pilot_in_the_container_offline(cpu_image, docker_client):
    project, data, tag = cpu_image
    code, logs, container = run_container(docker_client, tag, ["pilot", "--run-id", "in-container"])
    try:
        assert code == 0, logs
        stream, _ = container.get_archive("/opt/bundle/project/runs/in-container/summary.json")
        summary = json.load(tarfile.open(fileobj=io.BytesIO(b"".join(stream))).extractfile("summary.json"))
    finally:
        container.remove(force=True)
    assert summary["accepted"] + summary["rejected"] == 12
    assert data["smoke_test"]["ok"] and data["smoke_test"]["torch"]["version"] == "2.13.0+cpu"
    assert data["smoke_test"]["torch"]["cuda"] is None


def test_cpu_image_labels_user_layers_and_size(cpu_image, docker_client, docker_engine, debian_python_image):
    project, data, tag = cpu_image
    image = docker_client.images.get(tag)
    labels = image.labels
    assert all(labels.get(key) for key in OCI + BUNDLER_LABELS), labels
    base = docker_client.images.get(debian_python_image)
    assert labels["io.bundler.base.digest"] == base.id and labels["io.bundler.base.kind"] == "local-image-id"
    assert labels["io.bundler.lock.sha256"] == hashlib.sha256((project / "requirements-rebuild.txt").read_bytes()).hexdigest()
    checks = {check["name"]: check for check in json.loads(labels["io.bundler.deps.verdict"])["checks"]}
    assert checks["torch build"]["finding"]["torch"]["version"] == "2.13.0+cpu"
    assert checks["shared libraries"]["finding"]["libraries"] >= 5 and checks["shared libraries"]["finding"]["unresolved"] == {}
    assert image.attrs["Config"]["User"] == "10001:10001"
    assert data["context"]["route"] == "loopback" and data["context"]["served_bytes"] == data["context"]["wheelhouse_bytes"] > 1e8
    assert data["context"]["deps_context_bytes"] < 20_000  # a Dockerfile, not the wheels
    code, logs, container = run_container(
        docker_client, tag, ["sh", "-c", "id -u; du -sb /opt/venv/lib/python3.11/site-packages; ls /opt/bundle/diagnostics/run.py"]
    )
    container.remove(force=True)
    assert code == 0, logs
    uid, site, diagnostics = logs.split("\n")[:3]
    assert uid == "10001" and diagnostics == "/opt/bundle/diagnostics/run.py"
    size = data["size"]
    assert size["total_bytes"] == image.attrs["Size"]
    assert size["total_bytes"] <= 1.05 * (base.attrs["Size"] + int(site.split()[0]))
    assert len(size["largest_layers"]) == 5 and "/opt/venv" in size["largest_layers"][0]["instruction"]
    # one layer holds the environment, and no layer holds a wheel
    names = layer_names(docker_engine, tag)
    holding_torch = [position for position, entries in names.items() if any(n.endswith("torch/__init__.py") for n in entries)]
    assert holding_torch == ["2"]
    assert not [name for position, entries in names.items() if position != "0" for name in entries if name.endswith(".whl")]
    assert not any(name.startswith("tmp/") for entries in names.values() for name in entries)


def test_cpu_image_is_pushed_to_and_pulled_from_a_real_registry(cpu_image, docker_client, docker_engine, tmp_path):
    project, data, tag = cpu_image
    with running_registry(tmp_path / "registry") as address:
        reference = f"{address}/team/example:1"
        result, pushed = build(project, "--base", data["base_image"], "--tag", tag, "--push", reference)
        assert result.returncode == 0, result.stderr[-3000:]
        assert pushed["push"]["reference"] == reference and pushed["push"]["digest"].startswith("sha256:")
        assert pushed["context"]["deps_reused"] and pushed["smoke_test"]["dependencies"]["reused"]
        image_id = docker_client.images.get(reference).id
        remove_tag(docker_engine, reference)
        pulled = docker_client.images.pull(f"{address}/team/example", tag="1")
        assert pulled.id == image_id
        remove_tag(docker_engine, reference)
