"""Fault injection for diagnostics/: each test feeds one broken observation through the Probe
boundary and lets the stage logic judge it for real."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import torch

from tests.diagnostics_support import (  # puts diagnostics/ on sys.path
    GB,
    H200,
    MI300X,
    ROCM_72,
    FakeProbe,
    gpu_probe,
    make_checkup,
    ordered,
    run_stage,
    write_bundle,
)

# isort: split
from bdiag import cli
from bdiag.checkup import read_bundle
from bdiag.probe import Probe
from bdiag.stages import (
    NAMES,
    checkpoint,
    collectives,
    compute,
    device,
    extensions,
    interpreter,
    memory,
    packages,
    storage,
    torchbuild,
)

# --- 1 interpreter ------------------------------------------------------------------------------


def test_wrong_interpreter_is_the_failing_stage(tmp_path):
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "venv")], check=True)
    probe = FakeProbe(environ={"BUNDLE_PYTHON": str(tmp_path / "venv" / "bin" / "python")})
    result = run_stage(interpreter, make_checkup(probe, "cpu"))
    assert result.status == "fail"
    assert str(tmp_path / "venv") in result.reason
    assert "diagnostics/run.py" in result.hint


def test_the_bundles_own_interpreter_passes():
    probe = FakeProbe(environ={"BUNDLE_PYTHON": sys.executable})
    result = run_stage(interpreter, make_checkup(probe, "cpu"))
    assert result.status == "pass", result.messages
    assert result.values["bundle_python"] == sys.executable


def test_python_minor_other_than_the_target_fails(tmp_path):
    bundle = read_bundle(str(write_bundle(tmp_path, python="3.10")))
    result = run_stage(interpreter, make_checkup(FakeProbe(python_version=(3, 11, 7)), "cpu", bundle))
    assert result.status == "fail"
    assert "3.10" in result.reason and "bundler lock --python 3.11" in result.hint


def test_bundle_toml_that_does_not_parse_fails_interpreter_stage(tmp_path):
    (tmp_path / "bundle.toml").write_text("[target\nbackend = ", encoding="utf-8")
    code = cli.main(["--project", str(tmp_path), "--json", str(tmp_path / "r.json")], probe=FakeProbe(), stream=open(os.devnull, "w"))
    report = json.loads((tmp_path / "r.json").read_text())
    assert code == 11
    assert report["first_failure"] == "interpreter"
    assert "does not parse as TOML" in report["stages"][0]["messages"][0]
    assert [stage["status"] for stage in report["stages"][1:]] == ["skip"] * 9


# --- 2 packages --------------------------------------------------------------------------------

LOCK = """# header
--index-url https://download.pytorch.org/whl/cu128
--extra-index-url https://pypi.org/simple

numpy==2.1.0 \\
    --hash=sha256:{h}
    # via torch
requests==2.32.3 \\
    --hash=sha256:{h}
torch==2.13.0+cu128 ; sys_platform == "linux" \\
    --hash=sha256:{h}
pywin32==306 ; sys_platform == "win32" \\
    --hash=sha256:{h}
""".format(h="a" * 64)


def _packages(tmp_path, lock_text, installed, pip=(True, 0, "")):
    bundle_path = write_bundle(tmp_path)
    if lock_text is not None:
        (tmp_path / "requirements-rebuild.txt").write_text(lock_text, encoding="utf-8")
    probe = FakeProbe(installed_distributions=installed, pip_check=pip)
    return run_stage(packages, make_checkup(probe, "cpu", read_bundle(str(bundle_path))))


def test_package_drift_names_missing_and_other_versions(tmp_path):
    result = _packages(tmp_path, LOCK, {"numpy": "2.1", "torch": "2.13.0+cpu"})
    assert result.status == "fail"
    assert result.values["missing"] == ["requests (locked 2.32.3)"]
    assert result.values["other_version"] == ["torch 2.13.0+cpu (locked 2.13.0+cu128)"]  # the local label matters
    assert "--require-hashes" in result.hint
    assert result.values["index_urls"] == ["https://download.pytorch.org/whl/cu128", "https://pypi.org/simple"]


def test_environment_matching_the_lock_passes(tmp_path):
    result = _packages(tmp_path, LOCK, {"numpy": "2.1.0", "requests": "2.32.3", "torch": "2.13.0+cu128"})
    assert result.status == "pass", result.messages
    assert result.values["locked"] == 3  # the win32-only pin does not apply here


def test_pip_check_failure_fails_and_missing_pip_warns(tmp_path):
    installed = {"numpy": "2.1.0", "requests": "2.32.3", "torch": "2.13.0+cu128"}
    broken = _packages(
        tmp_path, LOCK, installed, pip=(True, 1, "torchvision 0.28.0 has requirement torch==2.13.0, but you have torch 2.12.0.")
    )
    assert broken.status == "fail" and "pip check" in broken.reason
    no_pip = _packages(tmp_path, LOCK, installed, pip=(False, 0, ""))
    assert no_pip.status == "warn" and no_pip.values["pip_check"] == "pip absent"


def test_missing_lock_warns_with_bundler_lock_hint(tmp_path):
    result = _packages(tmp_path, None, {})
    assert result.status == "warn"
    assert "bundler lock" in result.hint


@pytest.mark.parametrize("text", ["torch>=2.0\n", "numpy==1.0 \\\n    --hash=sha256:xyz\n", "--frobnicate\n", b"\xff\xfe\x00garbage"])
def test_corrupt_lock_fails_with_hint(tmp_path, text):
    bundle_path = write_bundle(tmp_path)
    lock = tmp_path / "requirements-rebuild.txt"
    lock.write_bytes(text if isinstance(text, bytes) else text.encode())
    result = run_stage(
        packages, make_checkup(FakeProbe(installed_distributions={}, pip_check=(True, 0, "")), "cpu", read_bundle(str(bundle_path)))
    )
    assert result.status == "fail"
    assert "corrupt" in result.reason and "bundler lock" in result.hint


# --- 3 torch -------------------------------------------------------------------------------------


def test_cpu_only_build_with_gpu_expected_fails_naming_the_index(tmp_path):
    bundle = read_bundle(str(write_bundle(tmp_path, backend="cuda", accelerator="12.8")))
    checkup = make_checkup(FakeProbe(), None, bundle)
    checkup.backend, checkup.torch = "cuda", None
    result = run_stage(torchbuild, checkup)
    assert result.values["build"] == "cpu"
    assert result.status == "fail"
    assert "https://download.pytorch.org/whl/cu128" in result.hint


def test_no_torch_fails_the_torch_stage_and_skips_the_rest(tmp_path):
    def no_torch():
        raise ModuleNotFoundError("No module named 'torch'")

    code = cli.main(
        ["--backend", "cpu", "--keep-going", "--json", str(tmp_path / "r.json")],
        probe=FakeProbe(import_torch=no_torch, pip_check=(True, 0, "")),
        stream=open(os.devnull, "w"),
    )
    report = json.loads((tmp_path / "r.json").read_text())
    assert code == 13 and report["first_failure"] == "torch"
    assert all(stage["status"] == "skip" and "torch is not importable" in stage["messages"][0] for stage in report["stages"][3:])


# --- 4 device --------------------------------------------------------------------------------------


def test_healthy_h200_passes_device_stage():
    result = run_stage(device, make_checkup(gpu_probe()))
    assert result.status == "pass", result.messages
    assert result.values["devices"][0]["runs_via"] == "sm_90"
    assert result.values["devices"][0]["datasheet"] == "H200"


def test_arch_not_in_the_list_fails():
    probe = gpu_probe(
        device_properties=dict(H200, name="NVIDIA RTX PRO 6000", capability=[12, 0]),
        arch_list=["sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"],
    )
    result = run_stage(device, make_checkup(probe))
    assert result.status == "fail"
    assert "sm_120" in result.reason and "no kernel image" in result.hint


def test_arch_reached_only_through_ptx_warns():
    probe = gpu_probe(
        device_properties=dict(H200, name="NVIDIA RTX PRO 6000", capability=[12, 0]), arch_list=["sm_80", "sm_90", "compute_90"]
    )
    result = run_stage(device, make_checkup(probe, order=ordered("RTX PRO 6000")))
    assert result.status == "warn"
    assert result.values["devices"][0]["runs_via"] == "compute_90"


def test_ptx_newer_than_the_device_does_not_count():
    probe = gpu_probe(device_properties=dict(H200, name="Tesla T4", capability=[7, 5]), arch_list=["sm_80", "compute_80"])
    assert run_stage(device, make_checkup(probe)).status == "fail"


@pytest.mark.parametrize("driver, status", [("535.104.05", "fail"), ("575.51.03", "fail"), ("580.65.06", "pass"), ("580.20", "warn")])
def test_driver_against_the_cuda_13_minimums(driver, status):
    result = run_stage(device, make_checkup(gpu_probe(nvidia_driver_version=driver)))
    assert result.status == status, result.messages
    assert result.values["driver_minimum"] == "580"


def test_driver_too_old_for_cuda_12_8():
    probe = gpu_probe(torch_versions={"version": "2.9.1+cu128", "cuda": "12.8", "hip": None}, nvidia_driver_version="520.61.05")
    result = run_stage(device, make_checkup(probe))
    assert result.status == "fail"
    assert "525.60.13" in result.reason


def test_mig_sized_memory_fails_unless_allowed():
    slice_ = dict(H200, name="NVIDIA H200 MIG 3g.71gb", total_memory=71 * GB)
    result = run_stage(device, make_checkup(gpu_probe(device_properties=slice_)))
    assert result.status == "fail" and "MIG slice or partial card" in result.reason
    allowed = run_stage(device, make_checkup(gpu_probe(device_properties=slice_, environ={"BUNDLE_ALLOW_PARTIAL_GPU": "1"})))
    assert allowed.status == "warn"


def test_mig_visible_devices_and_mig_mode_fail():
    result = run_stage(device, make_checkup(gpu_probe(environ={"CUDA_VISIBLE_DEVICES": "MIG-4f6a-11ee"})))
    assert result.status == "fail" and "MIG-4f6a-11ee" in result.reason
    row = {"uuid": H200["uuid"], "index": "0", "mig.mode.current": "Enabled", "ecc.errors.uncorrected.volatile.total": "3"}
    smi = gpu_probe(gpu_table=[row])
    result = run_stage(device, make_checkup(smi))
    assert result.status == "fail"
    assert any("ECC" in message for message in result.messages)


def test_no_visible_gpu_fails_with_container_flags():
    result = run_stage(device, make_checkup(gpu_probe(cuda_available=False, device_count=0, nvidia_driver_version=None)))
    assert result.status == "fail" and "--gpus all" in result.hint


def test_rocm_gfx_mismatch_reports_hsa_override():
    probe = gpu_probe(
        torch_versions=ROCM_72,
        device_properties=dict(MI300X, gcnArchName="gfx1030"),
        arch_list=["gfx90a", "gfx942"],
        environ={"HSA_OVERRIDE_GFX_VERSION": "10.3.0"},
        rocm_driver_version="6.10.5",
    )
    result = run_stage(device, make_checkup(probe, "rocm"))
    assert result.status == "fail"
    assert "gfx1030" in result.reason and "HSA_OVERRIDE_GFX_VERSION=10.3.0" in result.reason
    assert result.values["HSA_OVERRIDE_GFX_VERSION"] == "10.3.0"
    mi300x = gpu_probe(torch_versions=ROCM_72, device_properties=MI300X, arch_list=["gfx90a", "gfx942"])
    good = run_stage(device, make_checkup(mi300x, "rocm"))
    assert good.status == "pass", good.messages


def test_cpu_backend_skips_device_checks():
    result = run_stage(device, make_checkup(FakeProbe(), "cpu"))
    assert result.status == "skip"


# --- 5 compute ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("tflops, status", [(800.0, "pass"), (600.0, "warn"), (300.0, "fail")])
def test_gemm_fraction_of_the_h200_datasheet(tflops, status):
    result = run_stage(compute, make_checkup(gpu_probe(matmul_tflops=tflops), facts={"devices": [H200]}))
    assert result.status == status, result.messages
    assert result.values["gemm_dtype"] == "bfloat16"
    assert result.values["gemm_fraction"] == pytest.approx(tflops / 989, abs=1e-3)


def test_mi300x_has_a_lower_bar():
    probe = gpu_probe(torch_versions=ROCM_72, matmul_tflops=600.0, copy_bandwidth_tbs=4.0)
    result = run_stage(compute, make_checkup(probe, "rocm", facts={"devices": [MI300X]}))
    assert result.values["gemm_fraction"] == pytest.approx(600 / 1307, abs=1e-3)
    assert result.status == "pass", result.messages


def test_slow_bandwidth_fails_and_throttle_reasons_reach_the_hint():
    probe = gpu_probe(copy_bandwidth_tbs=1.5, sample_under_load=[["0x0000000000000040", "1200"]])
    result = run_stage(compute, make_checkup(probe, facts={"devices": [H200]}))
    assert result.status == "fail"
    assert "hardware thermal slowdown" in result.hint


def test_wrong_gemm_results_fail():
    wrong = gpu_probe(device_matmul=lambda torch_, a, b, device_, dtype: (a @ b) * 1.01)
    result = run_stage(compute, make_checkup(wrong, facts={"devices": [H200]}))
    assert result.status == "fail" and "float64" in result.reason


def test_cpu_gemm_is_real_and_judged_on_correctness():
    result = run_stage(compute, make_checkup(Probe(), "cpu"))
    assert result.status == "pass"
    assert result.values["gemm_float32_relative_error"] < 1e-5
    assert result.values["gemm_gflops"] > 0


# --- 6 extensions ---------------------------------------------------------------------------------------


def test_missing_extension_fails_and_declared_ones_run_their_check(tmp_path):
    extra = (
        '[[extensions]]\nname = "json"\nmodule = "json"\ncheck = "json.dumps([1])"\n'
        '[[extensions]]\nname = "flash-attn"\nmodule = "flash_attn_not_here"\ncompile = true\n'
    )
    bundle = read_bundle(str(write_bundle(tmp_path, extra)))
    result = run_stage(extensions, make_checkup(Probe(), "cpu", bundle))
    assert result.status == "fail"
    assert "flash-attn" in result.reason and "devel base" in result.hint
    assert result.values["checks"] == {"json": "'[1]'"}


def test_extension_whose_op_raises_fails(tmp_path):
    bundle = read_bundle(str(write_bundle(tmp_path, '[[extensions]]\nname = "math"\nmodule = "math"\ncheck = "math.sqrt(-1)"\n')))
    result = run_stage(extensions, make_checkup(Probe(), "cpu", bundle))
    assert result.status == "fail" and "ValueError" in result.reason


def test_compile_smoke_runs_when_asked_and_a_broken_compile_warns():
    ok = run_stage(extensions, make_checkup(FakeProbe(environ={"BUNDLE_DIAG_COMPILE": "eager"}, compile_smoke=0.0), "cpu"))
    assert ok.status == "pass" and ok.values["compile"] == "eager"

    def broken(*args):
        raise RuntimeError("triton not found")

    bad = run_stage(extensions, make_checkup(gpu_probe(compile_smoke=broken)))
    assert bad.status == "warn" and "inductor" in bad.reason


# --- 7 memory -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("peak, status", [(40 * GB, "pass"), (140 * GB, "warn"), (160 * GB, "fail")])
def test_memory_headroom(peak, status):
    probe = gpu_probe(peak_memory={"peak_allocated": peak, "peak_reserved": peak, "total": 150 * GB, "extra": {}})
    result = run_stage(memory, make_checkup(probe))
    assert result.status == status


def test_out_of_memory_in_the_step_fails():
    def oom(*args):
        raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 20.00 GiB")

    result = run_stage(memory, make_checkup(gpu_probe(peak_memory=oom)))
    assert result.status == "fail" and "batch size" in result.hint


def test_project_memory_hook_runs_on_cpu(tmp_path):
    (tmp_path / "src" / "hookpkg").mkdir(parents=True)
    (tmp_path / "src" / "hookpkg" / "__init__.py").write_text("def step(device):\n    return {'ran_on': str(device)}\n")
    bundle = read_bundle(str(write_bundle(tmp_path, '[diagnostics]\nmemory_hook = "hookpkg:step"\n')))
    result = run_stage(memory, make_checkup(Probe(), "cpu", bundle))
    assert result.status == "skip"  # no device memory on CPU, but the step ran
    assert result.values["step_ran_on"] == "cpu"


# --- 8 io ---------------------------------------------------------------------------------------------------------


def test_tiny_or_missing_dev_shm_fails(tmp_path):
    tiny = run_stage(storage, make_checkup(FakeProbe(shm_stats={"total": 64 << 20, "free": 64 << 20}), "cpu", results_dir=str(tmp_path)))
    assert tiny.status == "fail" and "--shm-size" in tiny.hint
    missing = run_stage(storage, make_checkup(FakeProbe(shm_stats=None), "cpu", results_dir=str(tmp_path)))
    assert missing.status == "fail" and "does not exist" in missing.reason


def test_dataloader_bus_error_fails(tmp_path):
    def bus_error(*args, **kwargs):
        raise RuntimeError("DataLoader worker (pid 4242) is killed by signal: Bus error.")

    result = run_stage(storage, make_checkup(FakeProbe(run_dataloader=bus_error), "cpu", results_dir=str(tmp_path)))
    assert result.status == "fail" and "Bus error" in result.reason


def test_unwritable_results_folder_fails(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    result = run_stage(storage, make_checkup(Probe(), "cpu", results_dir=str(blocker / "runs")))
    assert result.status == "fail" and "not writable" in result.reason

    def denied(folder):
        raise PermissionError(13, "Permission denied", folder)

    result = run_stage(storage, make_checkup(FakeProbe(make_scratch=denied), "cpu", results_dir=str(tmp_path)))
    assert result.status == "fail" and "Permission denied" in result.reason


def test_real_io_stage_passes_and_cleans_up(tmp_path):
    result = run_stage(storage, make_checkup(Probe(), "cpu", results_dir=str(tmp_path / "runs")))
    assert result.status in ("pass", "warn"), result.messages
    assert result.values["dataloader"]["batches"] == 8
    assert list((tmp_path / "runs").iterdir()) == []


# --- 9 checkpoint ----------------------------------------------------------------------------------------------------


def test_checkpoint_reloads_bit_for_bit_in_a_fresh_process(tmp_path):
    result = run_stage(checkpoint, make_checkup(Probe(), "cpu", results_dir=str(tmp_path)))
    assert result.status == "pass", result.messages
    assert result.values["reload_pid"] != os.getpid()
    assert result.values["entries"] > 20
    assert list(tmp_path.iterdir()) == []


def test_silently_corrupted_checkpoint_fails(tmp_path):
    real = Probe()

    def corrupting_save(torch_, state, path):
        state = dict(state, model=dict(state["model"]))
        key = next(iter(state["model"]))
        flipped = state["model"][key].clone()
        flipped.view(-1)[0] += 1e-3
        state["model"][key] = flipped
        return real.save_checkpoint(torch_, state, path)

    result = run_stage(checkpoint, make_checkup(FakeProbe(save_checkpoint=corrupting_save), "cpu", results_dir=str(tmp_path)))
    assert result.status == "fail"
    assert "/model/0.weight" in result.reason and "bit for bit" in result.hint


def test_truncated_checkpoint_fails(tmp_path):
    real = Probe()

    def truncating_save(torch_, state, path):
        seconds = real.save_checkpoint(torch_, state, path)
        with open(path, "r+b") as handle:
            handle.truncate(os.path.getsize(path) // 2)
        return seconds

    result = run_stage(checkpoint, make_checkup(FakeProbe(save_checkpoint=truncating_save), "cpu", results_dir=str(tmp_path)))
    assert result.status == "fail" and "fresh process" in result.reason


# --- 10 collectives, exit codes, report -------------------------------------------------------------------------------


def test_collectives_skip_with_one_gpu_and_fail_on_a_broken_rank():
    assert run_stage(collectives, make_checkup(gpu_probe())).status == "skip"
    broken = gpu_probe(
        device_count=2, run_collective=[{"ok": True, "rank": 0}, {"ok": False, "error": "NCCL error: unhandled system error"}]
    )
    result = run_stage(collectives, make_checkup(broken))
    assert result.status == "fail" and "unhandled system error" in result.reason and "--ipc=host" in result.hint


def test_exit_code_names_the_first_failing_stage_and_keep_going_runs_the_rest(tmp_path):
    probe = FakeProbe(
        shm_stats=None,
        installed_distributions={},
        pip_check=(True, 0, ""),
        save_checkpoint=lambda *a: (_ for _ in ()).throw(OSError(28, "No space left on device")),
    )
    out = tmp_path / "report.json"
    code = cli.main(
        ["--backend", "cpu", "--keep-going", "--json", str(out), "--results", str(tmp_path / "runs")],
        probe=probe,
        stream=open(os.devnull, "w"),
    )
    report = json.loads(out.read_text())
    statuses = {stage["name"]: stage["status"] for stage in report["stages"]}
    assert code == 18 == report["exit_code"]  # io is stage 8
    assert report["first_failure"] == "io"
    assert statuses["checkpoint"] == "fail" and "No space left" in report["stages"][8]["messages"][0]
    assert [stage["name"] for stage in report["stages"]] == list(NAMES)
    assert set(report["stages"][0]) >= {"name", "status", "values", "seconds", "hint"}


def test_stop_at_first_failure_without_keep_going(tmp_path):
    out = tmp_path / "report.json"
    code = cli.main(
        ["--backend", "cpu", "--json", str(out)],
        probe=FakeProbe(shm_stats=None, installed_distributions={}, pip_check=(True, 0, "")),
        stream=open(os.devnull, "w"),
    )
    report = json.loads(out.read_text())
    assert code == 18
    assert all("not run: stage 8 io failed" in stage["messages"][0] for stage in report["stages"][8:])


def test_bad_usage_exits_2(capsys):
    assert cli.main(["--backend", "tpu"]) == 2
    assert cli.main(["--project", "/nonexistent/folder"]) == 2


def test_gpu_backend_without_a_device_fails_at_device_and_skips_the_gpu_stages(tmp_path):
    probe = gpu_probe(cuda_available=False, device_count=0, nvidia_driver_version=None, installed_distributions={}, pip_check=(True, 0, ""))
    out = tmp_path / "report.json"
    code = cli.main(
        ["--backend", "cuda", "--keep-going", "--json", str(out), "--results", str(tmp_path / "runs")],
        probe=probe,
        stream=open(os.devnull, "w"),
    )
    statuses = {stage["name"]: stage["status"] for stage in json.loads(out.read_text())["stages"]}
    assert code == 14
    assert statuses["compute"] == statuses["memory"] == statuses["checkpoint"] == statuses["collectives"] == "skip"
    assert statuses["io"] == "pass"
