"""The pure parts of diagnostics/: arch rule, driver minimums, lock reading, version equality."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "diagnostics"))

from bdiag import datasheet, lockfile


@pytest.mark.parametrize(
    "capability, arch_list, expected",
    [
        ((9, 0), ["sm_80", "sm_90"], ("sm_90", "cubin")),
        ((8, 6), ["sm_80"], ("sm_80", "cubin")),  # same major, lower minor runs
        ((8, 0), ["sm_86"], (None, "none")),  # a higher minor does not
        ((12, 0), ["sm_90", "compute_90"], ("compute_90", "ptx")),  # PTX JIT upward
        ((7, 5), ["sm_80", "compute_80"], (None, "none")),  # never downward
        ((9, 0), ["sm_90a"], ("sm_90a", "cubin")),
        ((10, 0), ["sm_90a", "sm_80"], (None, "none")),
        ((9, 0), [], (None, "none")),
    ],
)
def test_cuda_arch_support_follows_the_ptx_rule(capability, arch_list, expected):
    assert datasheet.cuda_arch_support(capability, arch_list) == expected


def test_driver_minimums_and_comparison():
    assert datasheet.nvidia_driver_minimums("12.8") == ("525.60.13", "570.26")
    assert datasheet.nvidia_driver_minimums("11.8") == ("450.80.02", "520.61.05")
    assert datasheet.driver_at_least("570.26", "570.26.0")
    assert not datasheet.driver_at_least("535.54.03", "580")


def test_datasheet_matching_and_thresholds():
    assert datasheet.match_gpu("NVIDIA H100 80GB HBM3")["bf16_tflops"] == 989
    assert datasheet.match_gpu("NVIDIA A100-SXM4-80GB")["bandwidth_tbs"] == 2.039
    assert datasheet.match_gpu("NVIDIA H100 PCIe")["name"] == "H100 PCIe"  # not the SXM figures
    assert datasheet.thresholds(datasheet.match_gpu("AMD Instinct MI300X"))["gemm_pass"] < datasheet.thresholds(None)["gemm_pass"]
    assert datasheet.index_url("cuda", "12.8").endswith("/cu128")
    assert datasheet.rocm_arch_base("gfx942:sramecc+:xnack-") == "gfx942"


@pytest.mark.parametrize(
    "installed, pinned, same",
    [
        ("2.13.0+cpu", "2.13.0+cpu", True),
        ("2.13.0+cpu", "2.13.0+cu128", False),
        ("2.13.0", "2.13.0+cu128", False),
        ("1.0", "1.0.0", True),
        ("2.0.0rc1", "2.0.0-rc.1", True),
        ("2.0.0", "2.0.1", False),
    ],
)
def test_same_version_keeps_local_labels(installed, pinned, same):
    assert lockfile.same_version(installed, pinned) is same


def test_read_lock_handles_pip_compile_output(tmp_path):
    path = tmp_path / "lock.txt"
    path.write_text(
        "#\n# pip-compile --generate-hashes\n#\n--extra-index-url https://download.pytorch.org/whl/cpu\n\n"
        "Jinja2==3.1.4 \\\n    --hash=sha256:" + "b" * 64 + " \\\n    --hash=sha256:" + "c" * 64 + "\n    # via torch\n"
        'setuptools==80.9.0 ; python_version >= "3.12" \\\n    --hash=sha256:' + "d" * 64 + "\n"
    )
    lock = lockfile.read_lock(str(path))
    assert lock.pins["jinja2"].version == "3.1.4" and len(lock.pins["jinja2"].hashes) == 2
    assert lock.index_urls == ["https://download.pytorch.org/whl/cpu"]
    assert lockfile.marker_applies(lock.pins["setuptools"].marker) is (sys.version_info >= (3, 12))


def test_corrupt_lock_names_the_line(tmp_path):
    path = tmp_path / "lock.txt"
    path.write_text("numpy==1.0\nthis is not a requirement\n")
    with pytest.raises(lockfile.LockCorrupt) as caught:
        lockfile.read_lock(str(path))
    assert caught.value.line == 2


@pytest.mark.parametrize(
    "marker, expected",
    [
        ('sys_platform == "linux" and python_version >= "3.8"', sys.platform == "linux"),
        ('(os_name == "nt" or platform_system == "Windows")', False),
        ('python_version < "3"', False),
        ("weird_marker ~~ 1", None),
    ],
)
def test_marker_evaluation(marker, expected):
    assert lockfile.marker_applies(marker) is expected


def test_subset_reader_reads_generated_bundle_toml_like_tomllib(tmp_path):
    """Python 3.10 images have no tomllib: the fallback must read what bundler writes."""
    import tomllib

    from bdiag import minitoml
    from tests.conftest import scaffold_project

    text = (scaffold_project(tmp_path / "p", backend="cuda", accelerator="13.0") / "bundle.toml").read_text()
    text += '\n[[extensions]]\nname = "flash-attn"  # a comment\nmodule = "flash_attn"\ncompile = true\ncheck = "flash_attn.__version__"\n'
    text += "\n[diagnostics]\nresults_dir = 'runs # not a comment'\n"
    assert minitoml.loads(text) == tomllib.loads(text)


def test_subset_reader_names_the_line_it_cannot_read():
    import pytest

    from bdiag import minitoml

    with pytest.raises(ValueError, match="line 2"):
        minitoml.loads('[target]\nbackends = [\n  "cuda",\n]\n')
