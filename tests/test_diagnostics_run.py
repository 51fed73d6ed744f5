"""diagnostics/ run for real: the whole folder on this CPU, without torch, through `bundler diagnose`,
and inside a container."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

REPO = Path(__file__).resolve().parents[1]
RUN_PY = REPO / "diagnostics" / "run.py"


def cpu_project(folder: Path, backend: str = "cpu", accelerator: str = "") -> Path:
    import torch

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "bundle.toml").write_text(
        '[project]\nname = "Diag"\npackage = "diag_pilot"\nentry = "python -m diag_pilot"\n'
        f'[target]\nbackend = "{backend}"\naccelerator = "{accelerator}"\ntorch = "2.13.0"\n'
        f'python = "{sys.version_info.major}.{sys.version_info.minor}"\n'
        '[build]\nlock = "requirements-rebuild.txt"\n'
        '[[extensions]]\nname = "json"\nmodule = "json"\ncheck = "json.dumps({\'ok\': 1})"\n',
        encoding="utf-8",
    )
    (folder / "requirements-rebuild.txt").write_text(
        f"--index-url https://download.pytorch.org/whl/cpu\n\ntorch=={torch.__version__} \\\n    --hash=sha256:{'0' * 64}\n    # via -r "
        "requirements.in\n",
        encoding="utf-8",
    )
    return folder


def run_folder(*args: str, python: str = sys.executable, env: dict | None = None, flags: tuple = ()) -> subprocess.CompletedProcess:
    return subprocess.run(
        [python, *flags, str(RUN_PY), *args], capture_output=True, text=True, timeout=600, env={**os.environ, **(env or {})}
    )


def test_whole_folder_runs_for_real_on_cpu(tmp_path):
    project = cpu_project(tmp_path / "project")
    report_path = tmp_path / "report.json"
    done = run_folder("--project", str(project), "--json", str(report_path), env={"BUNDLE_DIAG_GLOO": "1"})
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(report_path.read_text())
    status = {stage["name"]: stage["status"] for stage in report["stages"]}
    assert report["backend"] == "cpu" and report["backend_source"].endswith("bundle.toml")
    assert report["exit_code"] == 0 and report["first_failure"] is None
    assert status == {
        "interpreter": "pass",
        "packages": "pass",
        "torch": "pass",
        "device": "skip",
        "compute": "pass",
        "extensions": "pass",
        "memory": "skip",
        "io": "pass",
        "checkpoint": "pass",
        "collectives": "pass",
    }
    stages = {stage["name"]: stage for stage in report["stages"]}
    assert stages["collectives"]["values"]["backend"] == "gloo"
    assert all(rank["value"] == 3.0 for rank in stages["collectives"]["values"]["ranks"])
    assert stages["packages"]["values"]["pip_check"] == "ok"
    assert stages["io"]["values"]["results_dir"] == str(project / "runs")
    assert list((project / "runs").iterdir()) == []  # scratch folders cleaned
    assert "verdict: no stage failed" in done.stdout
    for line in ("interpreter", "checkpoint", "collectives"):
        assert line in done.stdout


def test_without_torch_the_torch_stage_fails_with_13(tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    report_path = tmp_path / "r.json"
    done = run_folder(
        "--backend",
        "cpu",
        "--json",
        str(report_path),
        python=str(venv / "bin" / "python"),
        flags=("-I",),
        env={"BUNDLE_PYTHON": str(venv / "bin" / "python")},
    )
    report = json.loads(report_path.read_text())
    assert done.returncode == 13, done.stdout + done.stderr
    assert report["stages"][0]["status"] == "pass"  # it is the bundle's interpreter, only torch is missing
    assert report["first_failure"] == "torch"
    assert "Traceback" not in done.stdout + done.stderr


def test_the_wrong_interpreter_fails_first_with_11(tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    done = run_folder("--backend", "cpu", python=str(venv / "bin" / "python"), flags=("-I",), env={"BUNDLE_PYTHON": sys.executable})
    assert done.returncode == 11, done.stdout
    assert "interpreter  FAIL" in done.stdout


def test_cpu_build_on_a_cuda_target_fails_with_13(tmp_path):
    done = run_folder("--backend", "cuda", "--json", str(tmp_path / "r.json"))
    assert done.returncode == 13
    torch_stage = json.loads((tmp_path / "r.json").read_text())["stages"][2]
    assert torch_stage["status"] == "fail" and "download.pytorch.org/whl/cu" in torch_stage["hint"]


def test_bad_usage_exits_2():
    assert run_folder("--backend", "tpu").returncode == 2


# --- bundler diagnose -------------------------------------------------------------------------------


def test_bundler_diagnose_local_returns_the_stage_exit_code_and_keeps_the_report(tmp_path):
    from bundler.cli import app

    project = cpu_project(tmp_path / "project", backend="cuda", accelerator="12.8")
    page = tmp_path / "diagnostics.html"
    result = CliRunner().invoke(app, ["diagnose", "--local", "--project", str(project), "--json", "--report", str(page)])
    assert result.exit_code == 13, result.output
    payload = json.loads(result.stdout)
    assert payload["ok"] is False and payload["exit_code"] == 13
    assert payload["report_html"] == str(page) and "First failing stage: 3 torch" in page.read_text()
    assert payload["report"]["first_failure"] == "torch"
    kept = Path(payload["report_path"])
    assert kept.parent == project / "runs" and kept.name.startswith("diagnostics-")
    assert json.loads(kept.read_text())["exit_code"] == 13
    assert "stage 3 'torch' failed" in result.stderr


def test_bundler_diagnose_refuses_both_modes(tmp_path):
    from bundler.cli import app

    project = cpu_project(tmp_path / "project")
    result = CliRunner().invoke(app, ["diagnose", "--local", "--image", "x:1", "--project", str(project)])
    assert result.exit_code == 2


def test_device_flags_per_backend_and_what_the_sdk_is_given():
    from bundler.engine import Devices, RunSpec, device_flags
    from bundler.engine.dockerapi import device_options
    from bundler.image.runcommand import run_flags

    cuda, _ = device_flags("cuda", nvidia_host=True)
    assert cuda == Devices(shm_size="8g", all_gpus=True)
    options = device_options(RunSpec("x", ["true"], devices=cuda).devices)
    assert options["ShmSize"] == 8 << 30
    assert options["DeviceRequests"][0]["Count"] == -1 and options["DeviceRequests"][0]["Capabilities"] == [["gpu"]]
    assert run_flags("cuda") == ["--gpus", "all", "--shm-size", "8g"]
    assert run_flags("cuda", "podman") == ["--device", "nvidia.com/gpu=all", "--shm-size", "8g"]
    no_gpu, notes = device_flags("cuda", nvidia_host=False)
    assert not no_gpu.all_gpus and notes
    rocm, _ = device_flags("rocm", nvidia_host=False, rocm_devices=("/dev/kfd", "/dev/dri"))
    assert rocm == Devices(devices=("/dev/kfd:/dev/kfd:rwm", "/dev/dri:/dev/dri:rwm"), group_add=("video",), ipc_mode="host")


def test_heavy_libraries_stay_out_of_cli_startup():
    done = subprocess.run(
        [sys.executable, "-c", "import bundler.cli, bundler.cli.diagnose, sys; print([m for m in ('docker','torch') if m in sys.modules])"],
        capture_output=True,
        text=True,
    )
    assert done.stdout.strip() == "[]"


@pytest.mark.docker
def test_bundler_diagnose_image_without_torch_fails_13_and_copies_the_report(tmp_path, any_engine):
    from bundler.cli import app

    engine, debian_python_image = any_engine.engine, any_engine.base
    context = io.BytesIO()
    with tarfile.open(fileobj=context, mode="w") as tar:
        dockerfile = (
            f"FROM {debian_python_image}\nRUN python3 -m venv --without-pip /opt/venv\n"
            "ENV BUNDLE_PYTHON=/opt/venv/bin/python\nCOPY diagnostics /opt/bundle/diagnostics\n"
        ).encode()
        info = tarfile.TarInfo("Dockerfile")
        info.size = len(dockerfile)
        tar.addfile(info, io.BytesIO(dockerfile))
        tar.add(REPO / "diagnostics", arcname="diagnostics", filter=lambda member: None if "__pycache__" in member.name else member)
    context.seek(0)
    tag = "bundler-test/diagnostics-notorch:1"
    engine.build(context, on_line=lambda line: None, tag=tag)
    try:
        project = cpu_project(tmp_path / "project")
        page = tmp_path / "diagnostics.html"
        argv = ["diagnose", "--image", tag, "--project", str(project), "--json", "--report", str(page), *any_engine.args]
        result = CliRunner().invoke(app, argv, env=any_engine.env)
        assert result.exit_code == 13, result.output
        payload = json.loads(result.stdout)
        assert payload["report_html"] == str(page) and "First failing stage: 3 torch" in page.read_text()
        kept = Path(payload["report_path"])
        assert kept.parent == project / "runs"
        report = json.loads(kept.read_text())
        assert report["first_failure"] == "torch" and report["exit_code"] == 13
        assert report["stages"][0]["values"]["executable"] == "/opt/venv/bin/python"
        assert report["stages"][0]["status"] == "pass"
        assert engine.image(tag).id not in engine.container_images()  # the container was removed
    finally:
        engine.remove_image(tag, force=True)
