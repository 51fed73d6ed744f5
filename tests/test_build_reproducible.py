"""Reproducible layers: `bundler build --check-reproducible`, both wheelhouse routes, the comparison itself.

Two cold builds of the same inputs must give the same layer diff IDs and labels, whether
the wheels came over loopback or in the build context; a difference names the first
file that differs. The fake CUDA project keeps each cold build to seconds.
"""

from __future__ import annotations

import io
import tarfile

import pytest

from bundler.errors import FindingsError
from bundler.image import build as builder
from bundler.image import layout
from bundler.image.reproducible import compare
from bundler.image.serve import WheelhouseServer
from bundler.target.bundle import load_bundle
from tests.build_support import build, locked_fake_projects, remove_built, remove_tag

pytestmark = [pytest.mark.docker]


@pytest.fixture(scope="module")
def fake_cuda(tmp_path_factory, fake_index, docker_client):
    project = locked_fake_projects(tmp_path_factory.mktemp("reproducible"), fake_index)["cuda"]
    made = []
    yield project, {"BUNDLER_INDEX_MAP": fake_index.index_map(), "BUNDLER_PIP_RETRIES": "0"}, made
    for data in made:
        remove_built(docker_client, data)


def leftovers(client) -> list[str]:
    return [tag for image in client.images.list(name=builder.CHECK_REPOSITORY) for tag in image.tags]


def test_check_reproducible_passes_and_both_routes_commit_the_same_layers(fake_cuda, docker_client, debian_python_image):
    project, env, made = fake_cuda
    tag = "bundler-test/reproducible:1"
    first, data = build(project, "--base", debian_python_image, "--tag", tag, env=env)  # the loopback route, or reused
    made.append(data)
    assert first.returncode == 0, first.stderr[-3000:]
    # the second, cold build of --check-reproducible goes through the context route
    result, checked = build(
        project, "--base", debian_python_image, "--tag", tag, "--check-reproducible", env=env | {"BUNDLER_WHEELHOUSE_ROUTE": "context"}
    )
    assert result.returncode == 0, result.stderr[-3000:]
    report = checked["reproducible"]
    assert report["reproducible"] and report["same_layers"] and report["same_labels"] and report["first_difference"] == ""
    assert len(report["layers"]) == 6 and all(layer["first"] == layer["second"] for layer in report["layers"])
    assert "a second cold build gave the same 6 layer diff IDs and labels" in result.stderr
    assert "sent in the build context" in result.stderr or "context" in result.stderr
    assert leftovers(docker_client) == []
    remove_tag(docker_client, tag)


def test_a_difference_is_named_the_first_build_kept_and_the_second_removed(fake_cuda, docker_client, debian_python_image, monkeypatch):
    project, env, made = fake_cuda
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    # the second build cannot reach the loopback server: it must fall back to the context route
    monkeypatch.setattr(WheelhouseServer, "url", property(lambda self: "http://127.0.0.1:9/"))
    # ... and its project files get another time: the layers differ, and the first file that differs is named
    original = builder.write_project_context
    calls = []

    def second_build_other_time(*args, **kwargs):
        calls.append(1)
        with monkeypatch.context() as patch:
            if len(calls) == 2:
                patch.setattr(layout, "FILE_TIME", layout.FILE_TIME + 86400)
            return original(*args, **kwargs)

    monkeypatch.setattr(builder, "write_project_context", second_build_other_time)
    tag = "bundler-test/not-reproducible:1"
    bundle = load_bundle(project)
    try:
        with pytest.raises(FindingsError) as caught:
            builder.run_build(bundle, base=debian_python_image, tag=tag, check_reproducible=True)
        error = caught.value
        assert error.exit_code == 1
        assert "layer 4 of 6" in error.message and "/opt: mtime 946684800 vs 946771200" in error.message, error.message
        reproducible = error.result["reproducible"]
        assert reproducible["same_labels"] and not reproducible["same_layers"], reproducible["labels_differing"]
        assert any("second build: the build could not reach 127.0.0.1" in note for note in error.result["notes"])
        assert docker_client.images.get(tag).id == error.result["image_id"]  # the first build stays, tagged
        assert leftovers(docker_client) == []
    finally:
        remove_tag(docker_client, tag)


def _image(client, base: str, command: str) -> str:
    dockerfile = f"FROM {base}\nRUN {command}\n".encode()
    context = io.BytesIO()
    with tarfile.open(fileobj=context, mode="w") as tar:
        info = tarfile.TarInfo("Dockerfile")
        info.size = len(dockerfile)
        tar.addfile(info, io.BytesIO(dockerfile))
    context.seek(0)
    image, _ = client.images.build(fileobj=context, custom_context=True, network_mode="none", nocache=True, rm=True)
    return image.id


def test_compare_names_the_first_differing_file_and_passes_an_image_against_itself(docker_client, debian_python_image):
    made = [
        _image(docker_client, debian_python_image, "mkdir /data && echo same > /data/a && echo one > /data/b && touch -d @1 /data /data/*"),
        _image(docker_client, debian_python_image, "mkdir /data && echo same > /data/a && echo two > /data/b && touch -d @1 /data /data/*"),
    ]
    try:
        same = compare(docker_client, made[0], made[0])
        assert same.same and same.first_difference == ""
        differ = compare(docker_client, made[0], made[1])
        assert not differ.same_layers and differ.same_labels
        assert "layer 2 of 2" in differ.first_difference and "/data/b: sha256" in differ.first_difference, differ.first_difference
    finally:
        for image in made:
            docker_client.images.remove(image)
