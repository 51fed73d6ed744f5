"""bundle.toml's ``[target] fabric``: the RDMA user space in the dependency image (read as the
engine reads the Dockerfile, linted, and once built for real), its refusal of a value it does
not know, and the note `bundler job --nodes N` gives when a job spans nodes on an image without it."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from bundler.image.deps import deps_key
from bundler.image.dockerfile import default_base, render
from bundler.target.bundle import load_bundle
from bundler.target.fabric import RDMA_PACKAGES
from tests.build_support import build_fresh, remove_built, run_container
from tests.conftest import scaffold_project
from tests.dockerfile_support import first, hadolint, shell_commands, stages
from tests.job_support import DIGEST, copy_project, job, locked_project

EXTENSION = '\n[[extensions]]\nname = "flash-attn"\nmodule = "flash_attn"\ncompile = true\n'
REGISTRY = "registry.example.com/team/example"


def with_fabric(root: Path, fabric: str | None) -> Path:
    """``root``'s bundle.toml with ``fabric = …`` in [target] (None: the key left out)."""
    if fabric is not None:
        path = root / "bundle.toml"
        path.write_text(re.sub(r"(?m)^\[target\]\n", f"[target]\nfabric = {json.dumps(fabric)}\n", path.read_text(), count=1))
    return root


def cuda_bundle(tmp_path: Path, fabric: str | None, *, compile_extension: bool = False):
    root = scaffold_project(tmp_path / f"p-{fabric}-{compile_extension}", backend="cuda", accelerator="12.8", torch_version="2.9.1")
    if compile_extension:
        with open(root / "bundle.toml", "a") as handle:
            handle.write(EXTENSION)
    return load_bundle(with_fabric(root, fabric))


def apt_installs(stage: list[tuple[str, str]]) -> list[list[str]]:
    """The packages of every `apt-get install` of the stage, one list per command."""
    found = []
    for keyword, arguments in stage:
        if keyword != "RUN":
            continue
        for words in shell_commands(arguments):
            words = [word for word in words if not word.startswith("DEBIAN_FRONTEND=")]
            if words[:2] == ["apt-get", "install"]:
                found.append([word for word in words[2:] if not word.startswith("-")])
    return found


# ----- the Dockerfile ---------------------------------------------------------------------------
@pytest.mark.parametrize("fabric", ["infiniband", "roce"])
@pytest.mark.parametrize("route", ["loopback", "context"])
def test_an_rdma_fabric_installs_the_verbs_packages_in_the_dependency_image_before_the_user_and_the_wheels(tmp_path, fabric, route):
    plan = render(cuda_bundle(tmp_path, fabric), "runtime", "python:3.11-slim-bookworm")
    image = stages(plan.deps_text(route))[-1]  # the context route's install stage is thrown away: only the image counts
    assert apt_installs(image) == [list(RDMA_PACKAGES)]
    step = first(image, "RUN", "apt-get install")
    assert 0 < step < first(image, "RUN", "useradd")  # as root, right after FROM, below the locked packages
    commands = shell_commands(image[step][1])
    assert ["apt-get", "update", "-q"] in commands
    cleanup = next(words for words in commands if words[:2] == ["rm", "-rf"])
    assert "/var/lib/apt/lists/*" in cleanup and "/var/log/dpkg.log" in cleanup  # no lists or dated logs in the layer
    installing = next(index for index, words in enumerate(commands) if words[1:3] == ["apt-get", "install"])
    assert commands.index(["apt-get", "clean"]) > installing  # the downloaded .deb files leave the layer too
    assert plan.needs_mirror and plan.deps_network(route) == ("host" if route == "loopback" else None)


@pytest.mark.parametrize("fabric", [None, "none"])
def test_without_an_rdma_fabric_nothing_is_installed_and_the_context_build_stays_offline(tmp_path, fabric):
    plan = render(cuda_bundle(tmp_path, fabric), "runtime", "python:3.11-slim-bookworm")
    for route in ("loopback", "context"):
        assert all(apt_installs(stage) == [] for stage in stages(plan.deps_text(route)))
    assert plan.deps_network("context") == "none"


def test_the_fabric_changes_the_dependency_image_key(tmp_path):
    class Pins:  # what deps_key reads of a lock
        install_body = "torch==2.9.1\n"

    keys = {}
    for fabric in (None, "none", "infiniband", "roce"):
        plan = render(cuda_bundle(tmp_path, fabric), "runtime", "python:3.11-slim-bookworm")
        keys[fabric] = deps_key(plan, "sha256:base", Pins(), [])  # type: ignore[arg-type]
    assert keys[None] == keys["none"]  # Ethernet and an unsaid fabric make the same image
    assert keys["infiniband"] == keys["roce"] != keys[None]  # the same packages serve both


def test_devel_flavours_add_the_packages_to_their_system_layer(tmp_path):
    bundle = cuda_bundle(tmp_path, "infiniband", compile_extension=True)
    apt_base = render(bundle, "devel", default_base(bundle, "devel"))
    (installs,) = apt_installs(stages(apt_base.deps_text("loopback"))[0])  # one apt install: Python, the compiler, the verbs
    assert installs[-3:] == list(RDMA_PACKAGES) and "build-essential" in installs
    python_base = render(bundle, "devel", "python:3.11-bookworm")  # holds Python and a compiler: an install of the verbs alone
    assert apt_installs(stages(python_base.deps_text("loopback"))[0]) == [list(RDMA_PACKAGES)]
    assert python_base.needs_mirror and python_base.deps_network("context") is None


def test_the_fabric_dockerfiles_pass_hadolint(tmp_path):
    texts = {}
    for fabric in ("infiniband", "none"):
        for compiled in (False, True):
            bundle = cuda_bundle(tmp_path / fabric, fabric, compile_extension=compiled)
            flavour = "devel" if compiled else "runtime"
            for base in {default_base(bundle, flavour), "python:3.11-bookworm" if compiled else "python:3.11-slim-bookworm"}:
                plan = render(bundle, flavour, base)
                for route in ("loopback", "context"):
                    texts[f"{fabric}-{flavour}-{base.replace('/', '_').replace(':', '_')}-{route}"] = plan.deps_text(route)
    result = hadolint(tmp_path, texts)
    assert result.returncode == 0, f"{result.stdout}{result.stderr}"


# ----- bundle.toml --------------------------------------------------------------------------------
@pytest.fixture
def project_of(tmp_path_factory, fake_index, tmp_path):
    """A copy of the locked CUDA project with ``lots`` lots of H100 and the given fabric."""

    def make(fabric: str | None, lots: int = 8) -> Path:
        master = locked_project(tmp_path_factory, fake_index, "cuda")
        return with_fabric(copy_project(master, tmp_path / "cuda", card="H100 SXM", lots=lots), fabric)

    return make


@pytest.mark.parametrize("value", ['"ib"', '"InfiniBand"', "true"])
def test_a_fabric_bundler_does_not_know_is_refused_naming_the_file_and_the_choices(project_of, value):
    project = project_of(None)
    path = project / "bundle.toml"
    path.write_text(path.read_text().replace("[target]\n", f"[target]\nfabric = {value}\n", 1))
    completed, document = job(project, "sky", "--image", f"{REGISTRY}@{DIGEST}")
    assert completed.returncode == 3, completed.stderr  # a project file error (README's exit codes)
    assert "Traceback" not in completed.stderr and str(path) in completed.stderr and "fabric" in completed.stderr
    if value != "true":
        assert "infiniband, roce, none" in completed.stderr
    assert not (project / "job-sky.yaml").exists()


# ----- bundler job ----------------------------------------------------------------------------------
@pytest.mark.parametrize(("fabric", "nodes", "warned"), [(None, "2", True), ("none", "2", False), ("roce", "2", False), (None, "1", False)])
def test_a_job_across_nodes_on_an_image_without_rdma_says_so_and_the_fix(project_of, fabric, nodes, warned):
    project = project_of(fabric)
    completed, document = job(project, "k8s", "--nodes", nodes, "--image", f"{REGISTRY}@{DIGEST}")
    assert completed.returncode == 0, completed.stderr
    notes = [note for note in document["notes"] if "RDMA" in note]
    assert bool(notes) == warned
    if warned:
        (note,) = notes
        assert "libibverbs1" in note and 'fabric = "infiniband"' in note and "bundler build" in note
        assert "Note: this job spans 2 nodes" in completed.stderr


# ----- a real build -------------------------------------------------------------------------------
@pytest.mark.docker
@pytest.mark.slow
def test_an_infiniband_image_holds_libibverbs_and_its_providers(project_of, fake_index, docker_engine, docker_client, debian_python_image):
    project = project_of("infiniband")
    tag = "bundler-test/fabric-ib:1"
    env = {"BUNDLER_INDEX_MAP": fake_index.index_map(), "BUNDLER_PIP_RETRIES": "0"}
    result, data = build_fresh(docker_engine, project, "--base", debian_python_image, "--tag", tag, env=env)
    try:
        assert result.returncode == 0, result.stderr[-3000:]
        assert docker_client.images.get(tag).labels["io.bundler.fabric"] == "infiniband"
        probe = (
            "import ctypes, glob; ctypes.CDLL('libibverbs.so.1'); ctypes.CDLL('librdmacm.so.1'); "
            "print(len(glob.glob('/usr/lib/*/libibverbs/libmlx5-rdmav*.so')))"
        )
        code, logs, container = run_container(docker_client, tag, ["/opt/venv/bin/python", "-c", probe])
        container.remove(force=True)
        assert code == 0, logs
        assert int(logs.strip().splitlines()[-1]) == 1  # the mlx5 provider (ConnectX, InfiniBand and RoCE) is there
    finally:
        remove_built(docker_engine, data)
        shutil.rmtree(project, ignore_errors=True)


def test_rewriting_the_target_keeps_the_fabric_and_the_lock_does_not_depend_on_it(tmp_path):
    from dataclasses import replace

    from bundler.lock.lockfile import input_hash
    from bundler.target.bundle import update_target

    bundle = cuda_bundle(tmp_path, "roce")
    update_target(bundle, replace(bundle.target, python="3.12"))  # what `bundler lock --python 3.12` does to [target]
    again = load_bundle(bundle.root)
    assert (again.fabric, again.target.python) == ("roce", "3.12")
    plain = cuda_bundle(tmp_path / "plain", None)
    assert input_hash("torch\n", plain.target) == input_hash("torch\n", replace(again.target, python="3.11"))  # a fabric stales no lock
