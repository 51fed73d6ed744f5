"""`bundler lock` against a local index of tiny wheels named exactly like PyTorch's."""

from __future__ import annotations

import json
import os
import sys
import venv
from pathlib import Path

import pytest

from bundler.errors import EngineError, ExternalError, LockError, ProjectFileError
from bundler.lock.lint import lint_lock
from bundler.lock.lockfile import bundle_lock, parse_pins, split_lock
from bundler.lock.run import run_lock
from bundler.lock.spec import make_spec
from bundler.target.bundle import Target, load_bundle
from tests.conftest import run_cli
from tests.lock_support import HOST_PYTHON, make_project, run_install_check


def snapshot(root: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in root.iterdir() if p.is_file()}


# ----- plan and dry run ----------------------------------------------------------------
def test_dry_run_json_gives_index_pins_and_base_image_and_writes_nothing(tmp_path):
    project = make_project(tmp_path / "p")
    before = snapshot(project)
    result = run_cli("lock", str(project), "--cuda", "12.8", "--dry-run", "--json")
    assert result.returncode == 0, result.stderr
    plan = json.loads(result.stdout)
    assert plan["index_url"] == "https://download.pytorch.org/whl/cu128"
    assert plan["pins"] == ["torch==2.9.1+cu128", "torchvision==0.24.1+cu128"]
    assert plan["base_image"] == f"python:{HOST_PYTHON}-slim-bookworm"
    assert plan["driver"] == {"toolkit": "570.26", "minor_compat": "525.60.13"}
    assert snapshot(project) == before
    assert "torch==2.9.1+cu128" in result.stderr


def test_companions_get_the_paired_version_and_label(tmp_path):
    project = make_project(tmp_path / "p", "torch\ntorchvision>=0.20\ntorchaudio\ntriton\nnumpy<3\n")
    plan = make_spec(load_bundle(project), Target("cuda", "12.8", "2.9.1", HOST_PYTHON))
    assert plan.compiled_input == ["torch==2.9.1+cu128", "torchvision==0.24.1+cu128", "torchaudio==2.9.1+cu128", "triton==3.5.1", "numpy<3"]
    rocm = make_spec(load_bundle(project), Target("rocm", "6.4", "2.9.1", HOST_PYTHON))
    assert "torchaudio==2.9.1+rocm6.4" in rocm.compiled_input and "triton" in rocm.compiled_input  # triton is CUDA's


def test_a_companion_specifier_that_excludes_the_pair_is_refused(tmp_path):
    project = make_project(tmp_path / "p", "torch\ntorchvision<0.20\n")
    with pytest.raises(LockError, match="excludes torchvision 0.24.1"):
        make_spec(load_bundle(project), Target("cpu", "", "2.9.1", HOST_PYTHON))


def test_host_options_in_requirements_in_are_refused(tmp_path):
    project = make_project(tmp_path / "p", "--find-links /opt/wheels\ntorch\n")
    with pytest.raises(ProjectFileError, match="--find-links"):
        make_spec(load_bundle(project), Target("cpu", "", "2.9.1", HOST_PYTHON))


@pytest.mark.parametrize(
    "flags, exit_code, words",
    [
        (["--cuda", "11.8"], 4, ["CUDA builds there: cu126, cu128, cu130.", "2.7.1"]),
        (["--torch", "2.5.1", "--rocm", "6.4"], 4, ["ROCm builds there: rocm6.1, rocm6.2.", "2.8.0, 2.9.0, 2.9.1"]),
        (["--torch", "2.9.7"], 4, ["2.9.0, 2.9.1"]),
        (["--torch", "2.1.0", "--python", "3.13"], 4, ["3.8, 3.9, 3.10, 3.11"]),
        (["--cuda", "12.8", "--cpu"], 2, ["one backend"]),
    ],
)
def test_impossible_targets_are_refused_before_anything_is_written(tmp_path, flags, exit_code, words):
    project = make_project(tmp_path / "p")
    before = snapshot(project)
    result = run_cli("lock", str(project), *flags)
    assert result.returncode == exit_code, result.stderr
    assert all(word in result.stderr for word in words), result.stderr
    assert "Traceback" not in result.stderr
    assert snapshot(project) == before


def test_torch_minor_means_its_latest_patch_and_base_image_follows_python(tmp_path):
    from bundler.lock.request import requested_target
    from bundler.target.table_file import load_table

    bundle = load_bundle(make_project(tmp_path / "p"))
    target = requested_target(bundle, load_table(), torch="2.7", python="3.12", cuda="cu128")
    assert (target.torch, target.accelerator, target.base_image) == ("2.7.1", "12.8", "python:3.12-slim-bookworm")


# ----- resolution on the host against the fake index ---------------------------------------
@pytest.mark.parametrize(
    "flag, label, must_have",
    [
        (("--cuda", "12.8"), "cu128", "nvidia-cuda-runtime-cu12"),
        (("--rocm", "6.4"), "rocm6.4", "pytorch-triton-rocm"),
        (("--cpu",), "cpu", None),
    ],
)
def test_lock_for_cuda_rocm_and_cpu_targets(tmp_path, indexed, flag, label, must_have):
    project = make_project(tmp_path / "p", "torch==2.9.1\ntorchvision\ntorchaudio\nnumpy\n")
    result = run_lock(
        load_bundle(project),
        cuda=flag[1] if flag[0] == "--cuda" else None,
        rocm=flag[1] if flag[0] == "--rocm" else None,
        cpu=flag[0] == "--cpu",
    )
    assert result.action == "written"
    text = (project / "requirements-rebuild.txt").read_text()
    pins = {pin.name: pin for pin in parse_pins(split_lock(text)[1])}
    assert pins["torch"].version == f"2.9.1+{label}"  # never PyPI's unlabelled 2.9.1
    assert pins["torchvision"].version == f"0.24.1+{label}" and pins["torchaudio"].version == f"2.9.1+{label}"
    assert all(pin.hashes for pin in pins.values())
    expected_torch_file = f"torch-2.9.1+{label}-cp{HOST_PYTHON.replace('.', '')}-cp{HOST_PYTHON.replace('.', '')}-"
    torch_file = next(p.name for p in (indexed.root / "files").iterdir() if p.name.startswith(expected_torch_file))
    assert indexed.file_hash(torch_file) in pins["torch"].hashes
    if must_have:
        assert must_have in pins
    if label == "cpu":
        assert not any(name.startswith("nvidia-") for name in pins)
    # the lock names the public index, never the local one it was resolved against
    assert f"--index-url https://download.pytorch.org/whl/{label}\n" in text
    assert "file://" not in text and str(indexed.root) not in text and "/opt/wheels" not in text
    assert bundle_lock(load_bundle(project)).state.status == "fresh"
    bundle_text = (project / "bundle.toml").read_text()
    assert "# my comment stays" in bundle_text and f'backend = "{flag[0][2:]}"' in bundle_text


def test_warm_relock_reuses_the_lock_and_a_change_makes_it_stale(tmp_path, indexed):
    project = make_project(tmp_path / "p")
    run_lock(load_bundle(project), cuda="12.8")
    lock = project / "requirements-rebuild.txt"
    first = lock.read_bytes()
    again = run_lock(load_bundle(project))
    assert again.action == "unchanged" and again.resolution is None and lock.read_bytes() == first
    (project / "requirements.in").write_text("torch==2.9.1\ntorchvision\nnumpy\njinja2\n")
    state = bundle_lock(load_bundle(project)).state
    assert state.status == "stale" and "requirements.in changed" in state.detail
    assert run_lock(load_bundle(project)).action == "written"
    assert bundle_lock(load_bundle(project)).state.status == "fresh"


def test_target_change_in_bundle_toml_makes_the_lock_stale(tmp_path, indexed):
    project = make_project(tmp_path / "p")
    run_lock(load_bundle(project), cuda="12.8")
    bundle_file = project / "bundle.toml"
    bundle_file.write_text(bundle_file.read_text().replace('accelerator = "12.8"', 'accelerator = "13.0"'))
    state = bundle_lock(load_bundle(project)).state
    assert state.status == "stale" and "accelerator '12.8' -> '13.0'" in state.detail


def test_hand_edited_lock_is_tampered_and_lock_refuses_to_touch_it(tmp_path, indexed):
    project = make_project(tmp_path / "p")
    run_lock(load_bundle(project), cpu=True)
    lock = project / "requirements-rebuild.txt"
    edited = lock.read_text().replace("numpy==2.1.0", "numpy==1.26.4")
    lock.write_text(edited)
    state = bundle_lock(load_bundle(project)).state
    assert state.status == "tampered" and "edited" in state.detail
    result = run_cli("lock", str(project), env={"BUNDLER_INDEX_MAP": indexed.index_map()})
    assert result.returncode == 6 and "edited" in result.stderr
    assert lock.read_text() == edited
    regenerated = run_lock(load_bundle(project), upgrade=True)
    assert regenerated.backup.read_text() == edited
    assert bundle_lock(load_bundle(project)).state.status == "fresh"


def test_missing_lock_state(tmp_path):
    assert bundle_lock(load_bundle(make_project(tmp_path / "p"))).state.status == "missing"


def test_conflicting_pins_are_summarised_in_two_lines_and_the_old_lock_stays(tmp_path, indexed):
    project = make_project(tmp_path / "p")
    run_lock(load_bundle(project), cpu=True)
    lock = project / "requirements-rebuild.txt"
    before = lock.read_bytes()
    (project / "requirements.in").write_text("torch==2.9.1\nnumpy==1.26.4\nnumpy==2.1.0\n")
    result = run_cli("lock", str(project), env={"BUNDLER_INDEX_MAP": indexed.index_map(), "BUNDLER_PIP_RETRIES": "0"})
    assert result.returncode == 6, result.stderr
    message = result.stderr[result.stderr.index("Error:") :]
    assert len(message.strip().splitlines()) == 1, message  # one paragraph
    assert "numpy==1.26.4" in message.split("Hint:")[0] and "Traceback" not in message
    assert lock.read_bytes() == before


def test_what_was_noted_before_resolving_is_repeated_in_the_refusal(tmp_path, indexed, monkeypatch):
    noted = "requirements.in:2: numpy==1.26.4 was made for Python ≤ 3.8, likely to fail to build"
    monkeypatch.setattr("bundler.lock.resolve.check_exact_pins", lambda spec, say: [noted])
    project = make_project(tmp_path / "p", requirements="torch==2.9.1\nnumpy==1.26.4\nnumpy==2.1.0\n")
    with pytest.raises(LockError) as raised:
        run_lock(load_bundle(project), cpu=True)
    assert raised.value.message.endswith(f" Noted before resolving: {noted}.")
    assert "numpy==1.26.4" in raised.value.message.split("Noted before")[0]  # the resolver's own words come first


def test_what_was_noted_before_resolving_is_repeated_when_a_probe_refuses_during_resolution(tmp_path, indexed, monkeypatch):
    noted = "requirements.in:1 pins torch==2.1.0; the Target's torch==2.9.1+cpu is used instead (bundle.toml [target])."
    monkeypatch.setattr("bundler.lock.resolve.check_exact_pins", lambda spec, say: [noted])

    def refuses(*args, **kwargs):  # what the torch probe raises from inside the resolution (a CUDA-only kernel)
        raise LockError("kern==1.0 cannot be built for a CPU Target.", hint="Lock for a CUDA Target.")

    monkeypatch.setattr("bundler.lock.resolve._resolve_standing_in", refuses)
    project = make_project(tmp_path / "p", requirements="torch==2.9.1\nnumpy==2.1.0\n")
    with pytest.raises(LockError) as raised:
        run_lock(load_bundle(project), cpu=True)
    assert raised.value.message == f"kern==1.0 cannot be built for a CPU Target. Noted before resolving: {noted.rstrip('.')}."
    # the project's own pin of another torch (mamba-chat's torch==2.1.0), which the Target's replaces, is named too
    monkeypatch.setattr("bundler.lock.resolve.check_exact_pins", lambda spec, say: [])
    (project / "requirements.in").write_text("torch==2.8.0\nnumpy==2.1.0\n")
    with pytest.raises(LockError) as raised:
        run_lock(load_bundle(project), cpu=True, torch="2.9.1")
    assert "Noted before resolving: requirements.in:1 pins torch==2.8.0" in raised.value.message


def test_unreachable_index_is_an_external_error_and_the_old_lock_stays(tmp_path, indexed, monkeypatch):
    project = make_project(tmp_path / "p")
    run_lock(load_bundle(project), cpu=True)
    before = (project / "requirements-rebuild.txt").read_bytes()
    (project / "requirements.in").write_text("torch==2.9.1\n")
    monkeypatch.setenv(
        "BUNDLER_INDEX_MAP", f"https://download.pytorch.org/whl=http://127.0.0.1:9/whl https://pypi.org/simple={indexed.pypi_url}"
    )
    with pytest.raises(ExternalError, match="127.0.0.1:9/whl/cpu .*cannot be reached"):
        run_lock(load_bundle(project))
    assert (project / "requirements-rebuild.txt").read_bytes() == before


def test_no_engine_when_a_container_is_needed(tmp_path, indexed, monkeypatch):
    other = "3.13" if HOST_PYTHON != "3.13" else "3.12"
    project = make_project(tmp_path / "p", python=other)
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")
    before = snapshot(project)
    with pytest.raises(EngineError) as caught:
        run_lock(load_bundle(project), cpu=True)
    assert f"Target Python {other}" in caught.value.message and "dockerd" in caught.value.hint
    assert caught.value.exit_code == 7
    assert snapshot(project) == before


def test_host_pip_config_never_reaches_the_lock(tmp_path, indexed, monkeypatch):
    conf = tmp_path / "pip.conf"
    conf.write_text(f"[global]\nfind-links = {tmp_path}\nextra-index-url = file:///opt/pypi/simple\nno-index = true\n")
    monkeypatch.setenv("PIP_CONFIG_FILE", str(conf))
    monkeypatch.setenv("PIP_FIND_LINKS", str(tmp_path))
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    project = make_project(tmp_path / "p")
    run_lock(load_bundle(project), cpu=True)
    text = (project / "requirements-rebuild.txt").read_text()
    assert "find-links" not in text and "file://" not in text and str(tmp_path) not in text


# ----- lint --------------------------------------------------------------------------
GOOD = (
    "--index-url https://download.pytorch.org/whl/cu128\n\ntorch==2.9.1+cu128 \\\n    --hash=sha256:" + "a" * 64 + "\n"
    "torchvision==0.24.1+cu128 \\\n    --hash=sha256:"
    + "b" * 64
    + "\nnvidia-cublas-cu12==12.8.4.1 \\\n    --hash=sha256:"
    + "c" * 64
    + "\n"
)
EXPECTED = {"torch": "2.9.1+cu128", "torchvision": "0.24.1+cu128"}
CUDA = Target("cuda", "12.8", "2.9.1", "3.11")


def test_lint_accepts_a_good_lock():
    assert lint_lock(GOOD, CUDA, EXPECTED, needs_setuptools=False) == []


@pytest.mark.parametrize(
    "edit, problem",
    [
        (lambda t: t.replace("    --hash=sha256:" + "c" * 64, "").replace("12.8.4.1 \\", "12.8.4.1"), "has no --hash"),
        (lambda t: t.replace("torchvision==0.24.1+cu128", "torchvision==0.24.1+cu126"), "different label"),
        (lambda t: t.replace("torch==2.9.1+cu128", "torch==2.9.1"), "is not the build of the Target"),
        (lambda t: t.replace("nvidia-cublas-cu12", "cublas"), "no nvidia-*"),
        (lambda t: t + "--find-links /opt/wheels\n", "host-specific"),
        (lambda t: t + "--extra-index-url file:///opt/pypi/simple\n", "local file URL"),
        (lambda t: t + "mypkg @ /home/me/mypkg\n", "machine-specific path"),
    ],
)
def test_lint_catches_each_problem(edit, problem):
    problems = lint_lock(edit(GOOD), CUDA, EXPECTED, needs_setuptools=False)
    assert any(problem in p for p in problems), problems


def test_lint_wants_setuptools_and_rocm_triton():
    assert any("setuptools" in p for p in lint_lock(GOOD, CUDA, EXPECTED, needs_setuptools=True))
    rocm = GOOD.replace("cu128", "rocm6.4")
    problems = lint_lock(rocm, Target("rocm", "6.4", "2.9.1", "3.11"), {"torch": "2.9.1+rocm6.4"}, needs_setuptools=False)
    assert any("pytorch-triton-rocm" in p for p in problems)


# ----- verification where it runs ------------------------------------------------------
def test_verification_helper_installs_checks_and_compares_the_build(tmp_path, indexed):
    project = make_project(tmp_path / "p", "torch==2.9.1\ntorchaudio\n")
    run_lock(load_bundle(project), cuda="12.8")
    lock = project / "requirements-rebuild.txt"
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    python = str(env_dir / "bin" / "python")
    # the lock names download.pytorch.org; installing here goes through the same local index
    pip_args = ("--index-url", f"{indexed.torch_root_url}/cu128", "--extra-index-url", indexed.pypi_url)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")} | {"PIP_CONFIG_FILE": os.devnull}
    local_lock = tmp_path / "lock-local.txt"
    local_lock.write_text("\n".join(line for line in lock.read_text().splitlines() if not line.startswith("--")) + "\n")
    result = run_install_check(local_lock, Target("cuda", "12.8", "2.9.1", HOST_PYTHON), python, pip_args, env=env)
    assert result.ok, result.output
    assert result.torch == {"version": "2.9.1+cu128", "cuda": "12.8", "hip": None}
    wrong = run_install_check(local_lock, Target("cuda", "13.0", "2.9.1", HOST_PYTHON), python, pip_args, env=env)
    assert not wrong.ok and wrong.step == "import torch" and "CUDA 13.0" in wrong.output


def test_a_tampered_hash_fails_the_hashed_install(tmp_path, indexed):
    project = make_project(tmp_path / "p", "torch==2.9.1\n")
    run_lock(load_bundle(project), cpu=True)
    lock = project / "requirements-rebuild.txt"
    text = "\n".join(line for line in lock.read_text().splitlines() if not line.startswith("--")) + "\n"
    pins = parse_pins(text)
    torch_hashes = next(p for p in pins if p.name == "torch").hashes
    for digest in torch_hashes:
        text = text.replace(digest, "0" * 64)
    (tmp_path / "bad.txt").write_text(text)
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")} | {"PIP_CONFIG_FILE": os.devnull}
    result = run_install_check(
        tmp_path / "bad.txt",
        Target("cpu", "", "2.9.1", HOST_PYTHON),
        str(env_dir / "bin" / "python"),
        ("--index-url", f"{indexed.torch_root_url}/cpu", "--extra-index-url", indexed.pypi_url),
        env=env,
    )
    assert not result.ok and result.step == "install" and "HASHES" in result.output.upper()


@pytest.mark.skipif(sys.version_info < (3, 11, 1), reason="the host must be a newer micro release than the Target's X.Y.0")
def test_a_release_only_a_newer_micro_python_admits_is_left_out_of_a_lock_resolved_on_the_host(tmp_path, indexed):
    # the host (3.11.7) resolves; `bundler build` downloads for 3.11.0 and the image may hold 3.11.2 (soupsieve 4.1's
    # `>=3.11.5`): the release the host admits must not be locked
    from tests.fakeindex import _page, add_pypi_wheel

    old, new = add_pypi_wheel(indexed, "microfloor", "1.0", []), add_pypi_wheel(indexed, "microfloor", "2.0", [])
    _page(indexed.root / "pypi" / "simple" / "microfloor", [old.name, new.name], {new.name: f">={HOST_PYTHON}.1"})
    project = make_project(tmp_path / "p", requirements="torch==2.9.1\nmicrofloor\n")
    result = run_lock(load_bundle(project), cpu=True)
    pins = {pin.name: pin.version for pin in parse_pins(split_lock((project / "requirements-rebuild.txt").read_text())[1])}
    assert pins["microfloor"] == "1.0", pins
    assert any(note.startswith("microfloor: the newest releases need a newer Python than") for note in result.spec.notes)
    assert "python-floor" not in (project / "requirements-rebuild.txt").read_text()  # the constraint file stays out
