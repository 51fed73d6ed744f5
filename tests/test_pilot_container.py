"""The example pilot inside a real container, its dependencies installed offline from a wheelhouse."""

import io
import json
import subprocess
import sys
import tarfile

import pytest

from tests.conftest import scaffold_project

pytestmark = [pytest.mark.docker, pytest.mark.slow]

DOCKERFILE = """\
FROM {base}
COPY wheelhouse /wheelhouse
RUN python3 -m venv /opt/venv \\
 && /opt/venv/bin/pip install --no-index --find-links /wheelhouse --no-cache-dir torch==2.13.0 \\
 && rm -rf /wheelhouse
COPY project /opt/project
WORKDIR /opt/project
ENV PYTHONPATH=/opt/project/src
"""


def test_pilot_runs_in_a_container_without_network(tmp_path, docker_client, debian_python_image):
    context = tmp_path / "context"
    project = scaffold_project(context / "project", package_name="example")
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "-q", "--only-binary=:all:", "--dest", str(context / "wheelhouse"), "torch==2.13.0"],
        check=True,
    )
    (context / "Dockerfile").write_text(DOCKERFILE.format(base=debian_python_image))
    image, _ = docker_client.images.build(path=str(context), tag="bundler-test/pilot:latest", rm=True, network_mode="none")
    container = None
    try:
        container = docker_client.containers.run(
            image.id,
            ["/opt/venv/bin/python", "-m", "example.pilot", "--config", "config/pilot.json", "--run-id", "in-container"],
            network_mode="none",
            detach=True,
        )
        exit_code = container.wait(timeout=300)["StatusCode"]
        logs = container.logs().decode()
        assert exit_code == 0, logs
        stream, _ = container.get_archive("/opt/project/runs/in-container/summary.json")
        archive = tarfile.open(fileobj=io.BytesIO(b"".join(stream)))
        summary = json.load(archive.extractfile("summary.json"))
        assert summary["accepted"] + summary["rejected"] == 12
        assert summary["rejected_ids"] == ["doc-12"]
        assert "11 accepted, 1 rejected of 12 inputs" in logs
        assert not (project / "runs" / "in-container").exists()  # the run stayed in the container
    finally:
        if container is not None:
            container.remove(force=True)
        docker_client.images.remove(image.id, force=True)
