"""Dockerfile choice and text: flavour by extensions, base per backend, the instructions in
order (read as the engine reads them), hadolint clean, the file-time step run for real."""

from __future__ import annotations

import json
import shlex

import pytest

from bundler.image import layout
from bundler.image.dockerfile import (
    MARKER,
    STAGE,
    UnknownDevelBase,
    default_base,
    flavour_for,
    label_instruction,
    normalize_file_times,
    render,
)
from bundler.target.bundle import load_bundle
from tests.conftest import scaffold_project
from tests.dockerfile_support import env_pairs, first, hadolint, instructions, keywords, label_pairs, pip_install, shell_commands, stages

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


# ----- flavour and base ---------------------------------------------------------------------
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
    needs_mirror = not devel.startswith("python:")  # an apt base gets Python and a compiler from the distribution's mirror
    assert plan.deps_network("context") == (None if needs_mirror else "none")
    for route in ("loopback", "context"):
        built = stages(plan.deps_text(route))
        assert built[0][0] == ("FROM", f"{devel} AS system")
        installing = built[-2] if route == "context" else built[-1]
        assert "--no-build-isolation" in pip_install(installing)  # the extension builds against the locked torch
        system_runs = [arguments for keyword, arguments in built[0] if keyword == "RUN"]
        assert len(system_runs) == (2 if needs_mirror else 1)  # a python: base already has what the build needs; then the user
        assert "useradd" in system_runs[-1]


def test_devel_base_outside_known_families_is_refused(tmp_path):
    bundle = project(tmp_path, "cpu", compile_extension=True)
    with pytest.raises(UnknownDevelBase, match="bundler-test/bookworm"):
        render(bundle, "devel", "bundler-test/bookworm-python3.11:1")


# ----- layer order ----------------------------------------------------------------------------
def test_loopback_route_installs_offline_in_one_stage_then_sets_the_user_and_entry(tmp_path):
    plan = render(project(tmp_path, "cuda"), "runtime", "python:3.11-slim-bookworm")
    (stage,) = stages(plan.deps_text("loopback"))  # nothing but the environment is committed: no install stage
    assert stage[0] == ("FROM", "python:3.11-slim-bookworm")
    assert "COPY" not in keywords(stage)
    assert first(stage, "RUN", "useradd") < first(stage, "ARG", "WHEELHOUSE") < first(stage, "RUN", "pip install")
    after_install = keywords(stage)[first(stage, "RUN", "pip install") :]
    assert after_install.index("USER") < after_install.index("ENTRYPOINT")
    assert dict(stage)["USER"] == f"{layout.UID}:{layout.UID}"
    assert json.loads(dict(stage)["ENTRYPOINT"]) == [layout.ENTRYPOINT]
    assert env_pairs(stage)["PATH"] == f"{layout.VENV}/bin:$PATH"
    assert plan.deps_network("loopback") == "host"


def test_context_route_installs_in_a_stage_thrown_away_and_copies_only_the_environment(tmp_path):
    plan = render(project(tmp_path, "cuda"), "runtime", "python:3.11-slim-bookworm")
    install, image = stages(plan.deps_text("context"))
    assert install[0] == ("FROM", "python:3.11-slim-bookworm AS install")
    assert keywords(install) == ["FROM", "COPY", "ARG", "RUN"]
    assert install[1] == ("COPY", f"wheelhouse/ {layout.WHEELHOUSE_IN_CONTEXT}/")
    assert install[2] == ("ARG", f"WHEELHOUSE=file://{layout.WHEELHOUSE_IN_CONTEXT}")
    copies = [arguments for keyword, arguments in image if keyword == "COPY"]
    assert copies == [f"--from=install {STAGE}/ /"]  # the wheelhouse never reaches the dependency image
    assert first(image, "RUN", "useradd") < first(image, "COPY") < first(image, "USER") < first(image, "ENTRYPOINT")
    assert plan.deps_network("context") == "none"


@pytest.mark.parametrize("route", ["loopback", "context"])
def test_the_install_takes_only_hashed_local_wheels_and_every_run_normalizes_its_file_times(tmp_path, route):
    plan = render(project(tmp_path, "cpu"), "runtime", "python:3.11-slim-bookworm")
    built = stages(plan.deps_text(route))
    installing = built[0]
    words = pip_install(installing)
    assert {"--no-index", "--require-hashes", "--no-deps", "--no-compile"} <= set(words)
    assert words[words.index("--find-links") + 1] == "$WHEELHOUSE"
    runs = [arguments for stage in built for keyword, arguments in stage if keyword == "RUN"]
    assert len(runs) == 2  # the user's setup and the install
    for run in runs:
        commands = shell_commands(run)
        assert commands[:2] == [["set", "-e"], ["touch", MARKER]]
        assert commands[-2:] == [shlex.split(normalize_file_times()), ["rm", "-f", MARKER]]
    steps = shell_commands(installing[first(installing, "RUN", "pip install")][1])
    assert steps.index(words) < steps.index([f"{layout.VENV}/bin/python", "-m", "pip", "check"])
    compiling = next(words for words in steps if "compileall" in words)
    assert compiling[0] == "PYTHONHASHSEED=0" and "unchecked-hash" in compiling


def test_the_shipped_image_layers_code_after_the_entry_and_config_last_then_the_labels(tmp_path):
    bundle = project(tmp_path, "cuda")
    plan = render(bundle, "runtime", "python:3.11-slim-bookworm")
    labels = {"org.opencontainers.image.revision": "r$1", "io.bundler.target": 'torch "x"\\'}
    (final,) = stages(plan.final_text("bundler/deps:abc", labels))
    assert final == [
        ("FROM", "bundler/deps:abc"),
        ("COPY", "bundle/ /"),
        final[2],
        ("COPY", "project/ /"),
        ("COPY", "config/ /"),
        final[5],
    ]
    assert env_pairs(final) == {"BUNDLE_ENTRY": bundle.entry}
    assert label_pairs(final) == labels  # one LABEL step; every value comes back as given


def test_no_labels_leaves_no_label_step():
    assert instructions(label_instruction({})) == []
    assert keywords(instructions(label_instruction({"b": "2", "a": "1"}))) == ["LABEL"]


# ----- the file-time step, run for real --------------------------------------------------------
@pytest.mark.docker
def test_the_normalizing_step_stamps_what_the_step_made_and_leaves_the_engines_own_files_alone(docker_client, debian_python_image):
    script = "; ".join(
        [
            "set -e",
            f"touch {MARKER}",
            "sleep 0.05",
            "mkdir -p /opt/made && echo x > /opt/made/file",
            "touch /etc/hosts /etc/resolv.conf",  # the engine's bind mounts: touched, as a step could, yet left alone
            normalize_file_times(),
            "stat -c '%n %Y' /opt /opt/made /opt/made/file /etc/hosts /etc/resolv.conf",
        ]
    )
    output = docker_client.containers.run(debian_python_image, ["sh", "-c", script], remove=True, network_mode="none").decode()
    times = dict(line.rsplit(" ", 1) for line in output.splitlines())
    assert times["/opt/made"] == times["/opt/made/file"] == str(layout.FILE_TIME)
    assert int(times["/etc/hosts"]) > layout.FILE_TIME and int(times["/etc/resolv.conf"]) > layout.FILE_TIME
    assert times["/opt"] == str(layout.FILE_TIME)  # a folder on the way to a new file changed too: stamped


# ----- hadolint ---------------------------------------------------------------------------------
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
    result = hadolint(tmp_path, texts)
    assert result.returncode == 0, f"{result.stdout}{result.stderr}"


def test_hadolint_finds_what_it_is_run_for(tmp_path):
    """The linter runs and judges: a Dockerfile with a known fault fails it (so a pass above means something)."""
    result = hadolint(tmp_path, {"bad": "FROM python:3.11-slim-bookworm\nRUN cd /tmp && pip install numpy\n"})
    assert result.returncode != 0 and "DL3003" in result.stdout and "DL3013" in result.stdout
