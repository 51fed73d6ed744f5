"""The compatibility table (images/compat.toml): well formed, faithful to the reference, extensible."""

from __future__ import annotations

import re

import pytest

from bundler.errors import ProjectFileError, TargetError
from bundler.target.bundle import Target
from bundler.target.table import CompatTable
from bundler.target.table_file import ARCH_RE, load_table, load_table_from, shipped_table_path
from bundler.target.versions import build_name

# pytorch/test-infra's release build matrix at each release's go-live commit: minor -> (CUDA, ROCm, aarch64 CUDA)
BUILD_MATRIX = {
    "2.1": (["11.8", "12.1"], ["5.5", "5.6"], []),
    "2.2": (["11.8", "12.1"], ["5.6", "5.7"], []),
    "2.3": (["11.8", "12.1"], ["5.7", "6.0"], []),
    "2.4": (["11.8", "12.1", "12.4"], ["6.0", "6.1"], []),
    "2.5": (["11.8", "12.1", "12.4"], ["6.1", "6.2"], []),
    "2.6": (["11.8", "12.4", "12.6"], ["6.1", "6.2.4"], []),
    "2.7": (["11.8", "12.6", "12.8"], ["6.2.4", "6.3"], ["12.8"]),
    "2.8": (["12.6", "12.8", "12.9"], ["6.3", "6.4"], ["12.9"]),
    "2.9": (["12.6", "12.8", "13.0"], ["6.3", "6.4"], ["12.6", "12.8", "13.0"]),
    "2.10": (["12.6", "12.8", "13.0"], ["7.0", "7.1"], ["12.6", "12.8", "13.0"]),
    "2.11": (["12.6", "12.8", "13.0"], ["7.1", "7.2"], ["12.6", "12.8", "13.0"]),
    "2.12": (["12.6", "13.0", "13.2"], ["7.1", "7.2"], ["12.6", "13.0", "13.2"]),
    "2.13": (["12.6", "13.0", "13.2"], ["7.1", "7.2"], ["12.6", "13.0", "13.2"]),
    "2.14": (["12.6", "13.0", "13.2", "13.4"], ["7.2", "7.14"], ["12.6", "13.0", "13.2", "13.4"]),
}
DRIVERS = {  # CUDA -> (full toolkit, minor-version compatibility), NVIDIA's release notes and compatibility guide
    "11.8": ("520.61.05", "450.80.02"),
    "12.1": ("530.30.02", "525.60.13"),
    "12.4": ("550.54.14", "525.60.13"),
    "12.6": ("560.28.03", "525.60.13"),
    "12.8": ("570.26", "525.60.13"),
    "12.9": ("575.51.03", "525.60.13"),
    "13.0": ("580.65.06", "580"),
    "13.2": ("595.45.04", "580"),
}
INDEX_TAGS = {
    "cu118",
    "cu121",
    "cu124",
    "cu126",
    "cu128",
    "cu129",
    "cu130",
    "cu132",
    "cu134",
    "rocm6.1",
    "rocm6.2",
    "rocm6.2.4",
    "rocm6.3",
    "rocm6.4",
    "rocm7.0",
    "rocm7.1",
    "rocm7.2",
    "rocm7.14",
    "cpu",
}


@pytest.fixture(scope="module")
def table() -> CompatTable:
    return load_table_from(shipped_table_path())


def test_every_row_is_well_formed_and_says_where_its_facts_come_from(table):
    assert len(table.releases) >= 26
    for version, release in table.releases.items():
        major, minor, patch = version.split(".")
        if (int(major), int(minor)) <= (2, 10):  # torchaudio followed torch's version up to 2.10 only
            assert release.torchaudio == version
        assert release.python and all(re.match(r"^3\.\d+$", p) for p in release.python)
        for key, arch in release.arch.items():
            assert key in release.arch_keys() and all(ARCH_RE.match(a) for a in arch)
        for cuda in release.cuda + release.cuda_aarch64:
            assert cuda in table.cuda
        for rocm in release.rocm:
            assert rocm in table.rocm
        assert release.sources, f"torch {version} names no source"
        assert release.confirmed or not release.sources
    for info in list(table.cuda.values()) + list(table.rocm.values()):
        assert info.sources and (info.confirmed or "image-tags" in info.sources or "nvidia-compat" in info.sources), info
    for info in table.cuda.values():
        assert info.devel_base.startswith("nvidia/cuda:") and "-devel-ubuntu" in info.devel_base
    for info in table.rocm.values():
        assert info.devel_base.startswith("rocm/dev-ubuntu-22.04:") and info.devel_base.endswith("-complete")


@pytest.mark.parametrize("minor", sorted(BUILD_MATRIX, key=lambda v: tuple(map(int, v.split(".")))))
def test_rows_reproduce_the_release_build_matrix(table, minor):
    cuda, rocm, aarch64 = BUILD_MATRIX[minor]
    patches = [v for v in table.torch_versions() if v.startswith(minor + ".")]
    assert patches, f"no torch {minor}.x row"
    for version in patches:
        release = table.releases[version]
        assert (list(release.cuda), list(release.rocm), list(release.cuda_aarch64)) == (cuda, rocm, aarch64)
        assert release.cpu and set(release.build_tags()) <= INDEX_TAGS | {"rocm5.5", "rocm5.6", "rocm5.7", "rocm6.0"}


def test_the_wrong_entries_of_the_review_are_corrected(table):
    assert table.cuda["13.2"].driver_toolkit == "595.45.04"
    assert table.releases["2.12.0"].torchaudio == "2.11.0" and table.releases["2.13.0"].torchaudio == ""
    assert table.releases["2.14.0"].rocm == ("7.2", "7.14") and "13.4" in table.releases["2.14.1"].cuda
    assert {"2.12.1", "2.15.0"} <= set(table.releases)
    assert table.releases["2.15.0"].python[0] == "3.11" and "3.10" not in table.releases["2.15.0"].python
    assert [table.releases[v].triton for v in ("2.11.0", "2.12.0", "2.12.1", "2.13.0", "2.14.1")] == [
        "3.6.0",
        "3.7.0",
        "3.7.1",
        "3.7.1",
        "~=3.8.0",
    ]
    assert table.releases["2.14.0"].arch["rocm7.14"] and table.releases["2.9.1"].arch["cu126-aarch64"] == ("sm_80", "sm_90")


def test_known_patch_releases_and_the_cpu_build_on_disk(table):
    assert {"2.7.0", "2.7.1", "2.9.0", "2.9.1", "2.13.0"} <= set(table.releases)
    build = table.build_for(Target("cpu", "", "2.13.0", "3.11"))
    assert build.companions()["torch"] == "2.13.0+cpu"
    assert build.release.needs_setuptools("3.11")  # the real wheel declares setuptools>=77.0.3


def test_driver_minimums_keep_both_figures(table):
    for cuda, (toolkit, minor_compat) in DRIVERS.items():
        assert (table.cuda[cuda].driver_toolkit, table.cuda[cuda].driver_minor_compat) == (toolkit, minor_compat)


def test_architectures_from_the_reference(table):
    cu128_27 = table.build_for(Target("cuda", "12.8", "2.7.1", "3.11")).arch
    assert cu128_27[0] == "sm_75" and "sm_120" in cu128_27 and "compute_120" in cu128_27
    assert table.build_for(Target("cuda", "12.6", "2.9.1", "3.11")).arch[0] == "sm_50"
    assert "gfx942" in table.build_for(Target("rocm", "6.4", "2.9.1", "3.11")).arch


def test_build_labels_urls_and_companions(table):
    build = table.build_for(Target("rocm", "6.2.4", "2.7.1", "3.12"))
    assert build.index_url == "https://download.pytorch.org/whl/rocm6.2.4"
    assert build.companions() == {
        "torch": "2.7.1+rocm6.2.4",
        "torchvision": "0.22.1+rocm6.2.4",
        "torchaudio": "2.7.1+rocm6.2.4",
        "pytorch-triton-rocm": "3.3.1",
    }
    aarch64 = table.build_for(Target("cpu", "", "2.9.1", "3.11", platform="linux_aarch64"))
    assert aarch64.companions()["torch"] == "2.9.1"  # PyTorch's aarch64 CPU wheels carry no label


@pytest.mark.parametrize(
    "target, builds, suggestion, never",
    [
        # the lowest build at or above the one asked: an old driver is not sent to the newest CUDA
        (Target("cuda", "11.8", "2.9.1", "3.11"), "cu126, cu128, cu130", "--cuda 12.6", ["13.0", "rocm"]),
        # else the highest below; a ROCm Target is never offered CUDA
        (Target("rocm", "6.4", "2.5.1", "3.11"), "rocm6.1, rocm6.2", "--rocm 6.2", ["cuda", "cu12"]),
        (Target("rocm", "5.0", "2.9.1", "3.11"), "rocm6.3, rocm6.4", "--rocm 6.3", ["cuda"]),
        # an accelerator no release has: no "torch release that has cu999"
        (Target("cuda", "99.9", "2.9.1", "3.11"), "cu126, cu128, cu130", "--cuda 13.0", ["rocm", "release that has"]),
    ],
)
def test_impossible_builds_suggest_the_nearest_build_of_the_same_backend(table, target, builds, suggestion, never):
    with pytest.raises(TargetError) as caught:
        table.build_for(target)
    error = caught.value
    assert builds in error.message and suggestion in error.hint and error.exit_code == 4
    assert not any(word in error.hint for word in never), error.hint


def test_nearest_build_helper_prefers_at_or_above_then_below():
    from bundler.target.table import _nearest_version

    assert _nearest_version(["12.6", "12.8", "13.0"], "12.7") == "12.8"
    assert _nearest_version(["12.6", "12.8", "13.0"], "12.8") == "12.8"
    assert _nearest_version(["6.1", "6.2"], "6.4") == "6.2"
    assert _nearest_version(["6.2.4", "6.3"], "6.2") == "6.2.4"


def test_unknown_torch_and_python_are_refused(table):
    with pytest.raises(TargetError, match="2.9.0, 2.9.1"):
        table.build_for(Target("cpu", "", "2.9.7", "3.11"))
    with pytest.raises(TargetError, match="3.8, 3.9, 3.10, 3.11"):
        table.build_for(Target("cpu", "", "2.1.0", "3.13"))
    with pytest.raises(TargetError, match="no ROCm build of torch for Linux aarch64"):
        table.build_for(Target("rocm", "6.4", "2.9.1", "3.11", platform="linux_aarch64"))


USER_ROW = """
[cuda."13.4"]
driver_toolkit = "590.10"
driver_minor_compat = "580"
devel_base = "nvidia/cuda:13.4.0-cudnn-devel-ubuntu24.04"
confirmed = false

[[release]]
torch = "2.15.0"
torchvision = "0.30.0"
torchaudio = "2.15.0"
cuda = ["13.0", "13.4"]
rocm = ["7.2"]
python = ["3.11", "3.12"]
setuptools = "always"
confirmed = false
"""


def test_user_rows_from_the_config_dir_merge_over_the_shipped_table(tmp_path, monkeypatch):
    config = tmp_path / "config"
    (config / "bundler").mkdir(parents=True)
    (config / "bundler" / "compat.toml").write_text(USER_ROW)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config))
    table = load_table()
    assert "2.15.0" in table.releases and "2.9.1" in table.releases
    build = table.build_for(Target("cuda", "13.4", "2.15.0", "3.12"))
    assert build.companions()["torchvision"] == "0.30.0+cu134"
    assert build.index_url.endswith("/cu134")


def test_bundler_compat_env_row_replaces_a_shipped_row(tmp_path, monkeypatch):
    override = tmp_path / "mine.toml"
    override.write_text('[[release]]\ntorch = "2.9.1"\ntorchvision = "0.24.1"\ntorchaudio = "2.9.1"\ncuda = ["12.8"]\npython = ["3.12"]\n')
    monkeypatch.setenv("BUNDLER_COMPAT", str(override))
    table = load_table()
    assert table.releases["2.9.1"].cuda == ("12.8",)
    assert table.releases["2.9.1"].file == str(override)
    assert table.releases["2.9.1"].cxx_standard == 17  # every torch from 2.1 on needs C++17: the default


def test_a_user_row_for_an_older_torch_names_the_cxx_standard_its_headers_need(tmp_path, monkeypatch):
    override = tmp_path / "older.toml"
    override.write_text(
        '[[release]]\ntorch = "2.0.1"\ntorchvision = "0.15.2"\ntorchaudio = "2.0.2"\npython = ["3.11"]\ncxx_standard = 14\n'
    )
    monkeypatch.setenv("BUNDLER_COMPAT", str(override))
    assert load_table().releases["2.0.1"].cxx_standard == 14


@pytest.mark.parametrize(
    "text, problem",
    [
        ('[[release]]\ntorch = "2.15"\ntorchvision = "0.30.0"\ntorchaudio = "2.15.0"\npython = ["3.11"]\n', "exact release"),
        (
            '[[release]]\ntorch = "2.15.0"\ntorchvision = "0.30.0"\ntorchaudio = "2.15.0"\ncuda = ["19.9"]\npython = ["3.11"]\n',
            "has no [cuda",
        ),
        ('[[release]]\ntorch = "2.15.0"\ntorchvision = "0.30.0"\ntorchaudio = "2.15.0"\npython = []\n', "must not be empty"),
        (
            '[[release]]\ntorch = "2.15.0"\ntorchvision = "0.30.0"\ntorchaudio = "2.15.0"\npython = ["3.11"]\ncolour = 1\n',
            "unknown key 'colour'",
        ),
        ('[rocm."7.9"]\narch = ["sm_90"]\ndevel_base = "x"\n', "arch must be a list"),
        (
            '[[release]]\ntorch = "2.15.0"\ntorchvision = "0.30.0"\ntorchaudio = "2.15.0"\npython = ["3.11"]\ncxx_standard = "17"\n',
            "is not a C++ standard",
        ),
        ("[[release]\n", "not valid TOML"),
    ],
)
def test_bad_user_rows_are_refused_naming_the_file(tmp_path, monkeypatch, text, problem):
    bad = tmp_path / "bad.toml"
    bad.write_text(text)
    monkeypatch.setenv("BUNDLER_COMPAT", str(bad))
    with pytest.raises(ProjectFileError) as caught:
        load_table()
    assert problem in caught.value.message and str(bad) in caught.value.message


def test_every_listed_build_has_a_name_and_a_url(table):
    for version in table.torch_versions():
        release = table.releases[version]
        for backend, versions in (("cuda", release.cuda), ("rocm", release.rocm)):
            for accel in versions:
                build = table.build_for(Target(backend, accel, version, release.python[-1]))
                assert build.index_url == f"{table.index_root}/{build_name(backend, accel)}"
                assert build.companions()["torch"] == f"{version}+{build.tag}"
