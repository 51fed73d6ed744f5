"""Hostile input to `bundler lock` (and the table it reads): the documented exit code, one
paragraph with a hint, no traceback, and the project left exactly as it was.

Classes: suggestions that stay within the Target's backend and platform; accelerator
versions no release has; empty and malformed flag values; bundle.toml values; a
BUNDLER_INDEX_MAP mirror without torch; a re-lock that conflicts with the old pins; the
user's own compatibility rows; where the lock may be written.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.hostile.harness import assert_refused, run
from tests.lock_support import make_project

USAGE, PROJECT_FILE, TARGET, LOCK, EXTERNAL = 2, 3, 4, 6, 9


def project_at(tmp_path: Path, **kwargs) -> Path:
    return make_project(tmp_path / "p", **kwargs)


def edit_bundle(project: Path, old: str, new: str) -> None:
    path = project / "bundle.toml"
    text = path.read_text()
    assert old in text, old
    path.write_text(text.replace(old, new))


def refused(tmp_path: Path, project: Path, args: list[str], code: int, *mentions: str, env: dict | None = None) -> None:
    outcome = run(["lock", str(project), *args], cwd=tmp_path, env=env, watched=(project,))
    assert_refused(outcome, code, *mentions)
    if "--json" in args:
        assert_refused(outcome, code, *mentions, json_mode=True)


# ----- suggestions stay within the backend and the platform ------------------------------------
@pytest.mark.parametrize(
    "flags, mentions, never",
    [
        (["--cuda", "11.8", "--torch", "2.9.1"], ["--cuda 12.6", "cu126, cu128, cu130"], ["--cuda 13.0", "--rocm"]),
        (["--cuda", "12.7", "--torch", "2.9.1"], ["--cuda 12.8"], ["--rocm", "--cpu"]),
        (["--cuda", "13.1", "--torch", "2.9.1"], ["--cuda 13.0"], ["--rocm"]),
        (["--cuda", "12.1", "--torch", "2.13.0"], ["--cuda 12.6"], ["--cuda 13.2", "--rocm"]),
        (["--rocm", "6.4", "--torch", "2.5.1"], ["--rocm 6.2", "rocm6.1, rocm6.2"], ["--cuda", "cu12"]),
        (["--rocm", "6.0", "--torch", "2.9.1"], ["--rocm 6.3"], ["--cuda"]),
        (["--rocm", "7.2", "--torch", "2.7.1"], ["--rocm 6.3"], ["--cuda"]),
        (["--rocm", "6.4", "--torch", "2.15.0"], ["has no ROCm build for Linux x86-64 at all", "--torch 2.9.1"], ["--cuda"]),
        (["--rocm", "6.4", "--platform", "linux/aarch64"], ["no ROCm build of torch for Linux aarch64", "linux/x86_64"], ["--cuda 1"]),
        # aarch64: the nearest aarch64 build, never an x86-64-only one
        (["--cuda", "12.9", "--torch", "2.9.1", "--platform", "linux/aarch64"], ["--cuda 13.0", "cu126, cu128, cu130"], ["--rocm"]),
        (["--cuda", "12.4", "--torch", "2.13.0", "--platform", "linux/aarch64"], ["--cuda 12.6", "for Linux aarch64"], ["--rocm"]),
        (
            ["--cuda", "12.8", "--torch", "2.6.0", "--platform", "linux/aarch64"],
            ["no CUDA build for Linux aarch64 at all", "--torch 2.7.0"],
            ["--cuda 12.4"],
        ),
        (
            ["--cuda", "12.8", "--torch", "2.13.0", "--torch-index", "pypi", "--platform", "linux/aarch64"],
            ["Linux aarch64 is the CUDA 13.0 build", "--cuda 13.0"],
            ["--rocm"],
        ),
        (
            ["--cuda", "12.8", "--torch", "2.9.1", "--torch-index", "pypi", "--platform", "linux/aarch64"],
            ["Linux aarch64 is the CPU build", "--cpu"],
            ["--cuda 1"],
        ),
    ],
)
def test_refusals_suggest_the_nearest_build_of_the_same_backend(tmp_path, flags, mentions, never):
    project = project_at(tmp_path)
    outcome = run(["lock", str(project), *flags], cwd=tmp_path, watched=(project,))
    assert_refused(outcome, TARGET, *mentions)
    hint = outcome.stderr.split(" Hint: ", 1)[1]
    assert not any(word in hint for word in never), hint


# ----- accelerator versions no release has ---------------------------------------------------
@pytest.mark.parametrize(
    "flags, mentions",
    [
        (["--cuda", "99.9"], ["No torch release in the table has CUDA 99.9", "--cuda 13.0"]),
        (["--cuda", "cu999"], ["No torch release in the table has CUDA 99.9", "--cuda 13.0"]),
        (["--cuda", "10.0"], ["No torch release in the table has CUDA 10.0", "--cuda 12.6"]),
        (["--rocm", "99.0"], ["No torch release in the table has ROCm 99.0", "--rocm 6.4"]),
        (["--rocm", "rocm1.0"], ["No torch release in the table has ROCm 1.0", "--rocm 6.3"]),
        (["--cuda", "12.8", "--torch", "9.9.9"], ["torch 9.9.9 is not in the compatibility table"]),
        (["--cuda", "12.8", "--torch", "2.9.7"], ["2.9.0, 2.9.1"]),
        (["--cuda", "12.8", "--python", "3.9"], ["no wheels for Python 3.9", "3.10, 3.11"]),
        (["--cpu", "--torch", "2.1.0", "--python", "3.13"], ["3.8, 3.9, 3.10, 3.11"]),
    ],
)
def test_builds_and_releases_the_table_does_not_know_are_refused(tmp_path, flags, mentions):
    project = project_at(tmp_path)
    refused(tmp_path, project, flags, TARGET, *mentions)
    assert "release that has" not in run(["lock", str(project), *flags], cwd=tmp_path).stderr


# ----- flag values: empty, malformed, hostile --------------------------------------------------
@pytest.mark.parametrize(
    "flags, mentions",
    [
        (["--cuda", ""], ["--cuda was given an empty value"]),
        (["--cuda", "  "], ["--cuda was given an empty value"]),
        (["--rocm", ""], ["--rocm was given an empty value"]),
        (["--torch", ""], ["--torch was given an empty value"]),
        (["--python", ""], ["--python was given an empty value"]),
        (["--torch-index", ""], ["--torch-index was given an empty value"]),
        (["--platform", ""], ["--platform was given an empty value"]),
        (["--cuda", "", "--cpu"], ["--cuda was given an empty value"]),
        (["--cuda", "12.8", "--rocm", "6.4"], ["one backend"]),
        (["--cuda", "12.8", "--cpu"], ["one backend"]),
        (["--cuda", "12"], ["accelerator version like '12.8'"]),
        (["--cuda", "12.8.1.1"], ["accelerator version like '12.8'"]),
        (["--cuda", "１２.８"], ["accelerator version like '12.8'"]),
        (["--cuda", "12.8; rm -rf ~"], ["accelerator version like '12.8'"]),
        (["--cuda", "nan"], ["accelerator version like '12.8'"]),
        (["--rocm", "-6.4"], ["accelerator version like '6.4'"]),
        (["--torch", "2.9.1 2.9.0"], ["exact release"]),
        (["--torch", "latest"], ["exact release"]),
        (["--torch", "1e400"], ["exact release"]),
        (["--torch", "2.9.1+cu128"], ["exact release"]),
        (["--python", "3"], ["minor version like 3.11"]),
        (["--python", "python3.11"], ["minor version like 3.11"]),
        (["--python", "2.7"], ["minor version like 3.11"]),
        (["--torch-index", "PyPI "], ["torch_index 'PyPI' is not one of pytorch, pypi"]),
        (["--torch-index", "https://pypi.org/simple"], ["is not one of pytorch, pypi"]),
        (["--platform", "windows"], ["platform 'windows' is not supported"]),
        (["--platform", "linux/arm64"], ["platform 'linux_arm64' is not supported", "linux_aarch64"]),
        (["--resolver", ""], ["--resolver '' is not one of pip-tools, uv"]),
        (["--resolver", "uv;rm -rf ~"], ["is not one of pip-tools, uv"]),
    ],
)
def test_flag_values_are_refused_as_bad_usage_before_anything_is_planned(tmp_path, flags, mentions):
    project = project_at(tmp_path)
    refused(tmp_path, project, flags, USAGE, *mentions)


def test_a_refusal_with_json_is_one_document(tmp_path):
    project = project_at(tmp_path)
    flags = ["--cpu", "--torch-index", "pypi", "--platform", "linux/x86_64", "--json"]
    refused(tmp_path, project, flags, TARGET, "PyPI's torch 2.9.1 for Linux x86-64 is the CUDA 12.8 build", "--cuda 12.8")


# ----- bundle.toml values ---------------------------------------------------------------------
@pytest.mark.parametrize(
    "old, new, mentions",
    [
        ('platform = "linux_x86_64"', "platform = 5", ["platform must be a string, got 5"]),
        ('platform = "linux_x86_64"', 'platform = "linux_x86_64"\ntorch_index = "conda"', ["torch_index 'conda'"]),
        ('platform = "linux_x86_64"', 'platform = "linux_x86_64"\ntorch_index = nan', ["torch_index must be a string, got nan"]),
        ('torch = "2.9.1"', 'torch = ""', ["torch is missing or empty"]),
        ('torch = "2.9.1"', "torch = 2.91", ["torch must be a string, got 2.91 (float)"]),
        ('torch = "2.9.1"', 'torch = "2.9"', ["exact release"]),
        ('python = "', 'python = "3.11.7"\n# "', ["minor version like 3.11"]),
        ('backend = "cpu"', 'backend = "tpu"', ["unknown backend 'tpu'"]),
        ('backend = "cpu"', 'backend = "cuda"', ["needs an accelerator version"]),
        ('accelerator = ""', 'accelerator = "12.8"', ["backend 'cpu' takes no accelerator"]),
        ('platform = "linux_x86_64"', 'platform = "linux_x86_64"\nplatfrom = "x"', ["unknown key 'platfrom'"]),
        ('lock = "requirements-rebuild.txt"', 'lock = "../outside.txt"', ["[build] lock '../outside.txt'", "inside the project"]),
        ('lock = "requirements-rebuild.txt"', 'lock = "/tmp/lock.txt"', ["[build] lock '/tmp/lock.txt'"]),
        ('lock = "requirements-rebuild.txt"', 'lock = ""', ["[build] lock ''"]),
        ('lock = "requirements-rebuild.txt"', "lock = 7", ["[build] lock 7"]),
        ('lock = "requirements-rebuild.txt"', 'lock = "sub/"', ["[build] lock 'sub/'"]),
        ("size_budget_mb = 3000", "size_budget_mb = inf", ["size_budget_mb"]),
    ],
)
def test_bundle_toml_values_are_refused_naming_the_file(tmp_path, old, new, mentions):
    project = project_at(tmp_path)
    edit_bundle(project, old, new)
    refused(tmp_path, project, ["--dry-run"], PROJECT_FILE, str(project / "bundle.toml"), *mentions)


def test_a_lock_path_through_a_link_out_of_the_project_is_refused(tmp_path):
    project = project_at(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (project / "locks").symlink_to(outside, target_is_directory=True)
    edit_bundle(project, 'lock = "requirements-rebuild.txt"', 'lock = "locks/requirements-rebuild.txt"')
    refused(tmp_path, project, ["--cpu"], PROJECT_FILE, "[build] lock 'locks/requirements-rebuild.txt'")
    assert list(outside.iterdir()) == []


@pytest.mark.parametrize(
    "setup, mentions",
    [
        (lambda p: (p / "bundle.toml").unlink(), ["not a bundler project"]),
        (lambda p: (p / "bundle.toml").write_text("[target\n"), ["bundle.toml"]),
        (lambda p: (p / "bundle.toml").write_bytes(b"\xff\xfe[target]"), ["bundle.toml"]),
        (lambda p: (p / "requirements.in").unlink(), ["requirements.in not found"]),
        (lambda p: (p / "requirements.in").write_text("--find-links /opt/wheels\ntorch\n"), ["--find-links is not allowed"]),
        (lambda p: (p / "requirements.in").write_text("torch\ntorchvision<0.20\n"), ["excludes torchvision 0.24.1"]),
    ],
)
def test_project_files_that_cannot_be_used(tmp_path, setup, mentions):
    project = project_at(tmp_path)
    setup(project)
    outcome = run(["lock", str(project), "--cpu", "--dry-run"], cwd=tmp_path, watched=(project,))
    assert_refused(outcome, PROJECT_FILE if "excludes" not in mentions[0] else LOCK, *mentions)


# ----- the user's own compatibility rows and environment ------------------------------------------
@pytest.mark.parametrize(
    "text, mentions",
    [
        ('[[release]]\ntorch = "2.9.1"\ntorchvision = "0.24.1"\ntorchaudio = "2.9.1"\npython = [nan]\n', ["python must be a list"]),
        (
            '[[release]]\ntorch = "2.9.1"\ntorchvision = "0.24.1"\ntorchaudio = "2.9.1"\npython = ["3.11"]\npypi_cuda = "inf"\n',
            ["pypi_cuda 'inf'"],
        ),
        (
            '[[release]]\ntorch = "2.9.1"\ntorchvision = "0.24.1"\ntorchaudio = "2.9.1"\npython = ["3.11"]\ntriton = ">=3"\n',
            ["triton '>=3'"],
        ),
        (
            '[[release]]\ntorch = "2.9.1"\ntorchvision = "0.24.1"\ntorchaudio = "2.9.1"\npython = ["3.11"]\nsources = ["nowhere"]\n',
            ["nowhere"],
        ),
        (
            '[[release]]\ntorch = "2.9.1"\ntorchvision = "0.24.1"\ntorchaudio = "2.9.1"\npython = ["3.11"]\nunchecked = ["colour"]\n',
            ["unchecked"],
        ),
        (
            '[[release]]\ntorch = "2.9.1"\ntorchvision = "0.24.1"\ntorchaudio = "2.9.1"\npython = ["3.11"]\ncuda_aarch64 = ["99.9"]\n',
            ["99.9"],
        ),
        ('[cuda."13.4"]\ndriver_toolkit = "inf"\ndriver_minor_compat = "580"\ndevel_base = "x"\n', ["driver_toolkit 'inf'"]),
        ("[sources]\npypi = 5\n", ["[sources] 'pypi'"]),
    ],
)
def test_bad_user_rows_are_refused_naming_their_file(tmp_path, text, mentions):
    project = project_at(tmp_path)
    mine = tmp_path / "mine.toml"
    mine.write_text(text)
    refused(tmp_path, project, ["--cpu", "--dry-run"], PROJECT_FILE, str(mine), *mentions, env={"BUNDLER_COMPAT": str(mine)})


@pytest.mark.parametrize(
    "env, code, mentions",
    [
        ({"BUNDLER_COMPAT": "/nonexistent/compat.toml"}, USAGE, ["/nonexistent/compat.toml", "not a file"]),
        ({"BUNDLER_INDEX_MAP": "https://download.pytorch.org/whl"}, USAGE, ["is not PUBLIC=LOCAL"]),
        ({"BUNDLER_INDEX_MAP": "https://download.pytorch.org/whl=file:///nonexistent/whl"}, EXTERNAL, ["is not a folder on this host"]),
    ],
)
def test_environment_values_that_cannot_be_used(tmp_path, env, code, mentions):
    project = project_at(tmp_path)
    refused(tmp_path, project, ["--cpu"], code, *mentions, env=env)


# ----- resolution: a mirror without torch, a re-lock that conflicts with the old pins -------------------
def test_a_mirror_without_torch_is_named_instead_of_blaming_the_pins(tmp_path, indexed):
    mirror = tmp_path / "mirror" / "whl"
    (mirror / "cpu" / "numpy").mkdir(parents=True)
    (mirror / "cpu" / "numpy" / "index.html").write_text("<html></html>")
    project = project_at(tmp_path)
    env = {"BUNDLER_INDEX_MAP": f"https://download.pytorch.org/whl={mirror.as_uri()} https://pypi.org/simple={indexed.pypi_url}"}
    refused(tmp_path, project, ["--cpu"], EXTERNAL, "has no torch==2.9.1+cpu", "lists no torch at all", "BUNDLER_INDEX_MAP", env=env)


def test_a_mirror_with_other_torch_builds_names_what_it_has(tmp_path, indexed):
    mirror = tmp_path / "mirror" / "whl"
    (mirror / "cpu").mkdir(parents=True)
    (mirror / "cpu" / "torch").symlink_to(Path(indexed.root) / "whl" / "cu128" / "torch", target_is_directory=True)
    project = project_at(tmp_path)
    env = {"BUNDLER_INDEX_MAP": f"https://download.pytorch.org/whl={mirror.as_uri()} https://pypi.org/simple={indexed.pypi_url}"}
    outcome = run(["lock", str(project), "--cpu"], cwd=tmp_path, env=env, watched=(project,))
    assert_refused(outcome, EXTERNAL, "has no torch==2.9.1+cpu", "it lists torch 2.9.1+cu128")


def test_a_relock_that_conflicts_with_the_old_pins_says_upgrade_in_one_paragraph(tmp_path, indexed):
    project = project_at(tmp_path)
    assert run(["lock", str(project), "--cpu"], cwd=tmp_path).code == 0
    (project / "requirements.in").write_text("torch==2.9.1\nnumpy==1.26.4\nnumpy==2.1.0\n")
    refused(tmp_path, project, [], LOCK, "numpy==1.26.4", "bundler lock --upgrade")
    (project / "requirements.in").write_text("torch==2.9.1\ntyping-extensions<4\n")
    refused(tmp_path, project, [], LOCK, "typing-extensions<4", "bundler lock --upgrade")


def test_a_conflict_without_an_old_lock_does_not_offer_upgrade(tmp_path, indexed):
    project = project_at(tmp_path, requirements="torch==2.9.1\nnumpy==1.26.4\nnumpy==2.1.0\n")
    outcome = run(["lock", str(project), "--cpu"], cwd=tmp_path, watched=(project,))
    assert_refused(outcome, LOCK, "numpy==1.26.4", "Loosen or fix the pins")
    assert "--upgrade" not in outcome.stderr
