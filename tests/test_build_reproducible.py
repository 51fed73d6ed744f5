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
def fake_cuda(tmp_path_factory, fake_index):
    project = locked_fake_projects(tmp_path_factory.mktemp("reproducible"), fake_index)["cuda"]
    made = []  # (engine, the build's JSON)
    yield project, {"BUNDLER_INDEX_MAP": fake_index.index_map(), "BUNDLER_PIP_RETRIES": "0"}, made
    for engine, data in made:
        remove_built(engine, data)


def leftovers(engine) -> list[str]:
    return [tag for image in engine.images(name=builder.CHECK_REPOSITORY) for tag in image.tags]


def test_check_reproducible_passes_and_both_routes_commit_the_same_layers(fake_cuda, any_engine):
    project, env, made = fake_cuda
    on, tag = any_engine, "bundler-test/reproducible:1"
    first, data = build(project, "--base", on.base, "--tag", tag, env=env, engine=on)  # the loopback route, or reused
    made.append((on.engine, data))
    assert first.returncode == 0, first.stderr[-3000:]
    # on Docker the second, cold build of --check-reproducible goes through the context route: both routes commit the same
    # layers. Podman's builder leaves a /run entry in every RUN layer, which the context route's COPY of the environment
    # does not have, so there the second build takes the same route as the first.
    route = {"BUNDLER_WHEELHOUSE_ROUTE": "context"} if on.name == "docker" else {}
    result, checked = build(project, "--base", on.base, "--tag", tag, "--check-reproducible", env=env | route, engine=on)
    assert result.returncode == 0, result.stderr[-3000:]
    report = checked["reproducible"]
    assert report["reproducible"] and report["same_layers"] and report["same_labels"] and report["first_difference"] == ""
    assert len(report["layers"]) == 6 and all(layer["first"] == layer["second"] for layer in report["layers"])
    assert "a second cold build gave the same 6 layer diff IDs and labels" in result.stderr
    assert "sent in the build context" in result.stderr or "context" in result.stderr
    assert leftovers(on.engine) == []
    remove_tag(on.engine, tag)


def test_a_difference_is_named_the_first_build_kept_and_the_second_removed(fake_cuda, docker_engine, debian_python_image, monkeypatch):
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
        assert docker_engine.image(tag).id == error.result["image_id"]  # the first build stays, tagged
        assert leftovers(docker_engine) == []
    finally:
        remove_tag(docker_engine, tag)


def _image(engine, base: str, command: str, labels: dict | None = None) -> str:
    dockerfile = f"FROM {base}\nRUN {command}\n".encode()
    context = io.BytesIO()
    with tarfile.open(fileobj=context, mode="w") as tar:
        info = tarfile.TarInfo("Dockerfile")
        info.size = len(dockerfile)
        tar.addfile(info, io.BytesIO(dockerfile))
    context.seek(0)
    return engine.build(context, on_line=lambda line: None, network_mode="none", no_cache=True, labels=labels)


def test_compare_names_the_first_differing_file_and_passes_an_image_against_itself(any_engine):
    engine, base = any_engine.engine, any_engine.base
    made = [
        _image(engine, base, "mkdir /data && echo same > /data/a && echo one > /data/b && touch -d @1 /data /data/*"),
        _image(engine, base, "mkdir /data && echo same > /data/a && echo two > /data/b && touch -d @1 /data /data/*", {"x": "1"}),
    ]
    try:
        same = compare(engine, made[0], made[0])
        assert same.same and same.first_difference == ""
        differ = compare(engine, made[0], made[1])
        assert not differ.same_layers and differ.labels == {"x": [None, "1"]}
        assert "layer 2 of 2" in differ.first_difference and "/data/b: sha256" in differ.first_difference, differ.first_difference
    finally:
        for image in made:
            remove_tag(engine, image)
