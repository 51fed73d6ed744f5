"""`bundler compat check`: the table against PyPI's metadata, from the recorded fixture
(tests/data/pypi-facts.json, written by `bundler compat check --record`) and, for the
reader itself, live from PyPI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bundler.lock.compatcheck import compare, derive
from bundler.lock.hashes import project_files
from bundler.lock.pypimeta import version_py, wheel_member
from bundler.pipsettings import PipSettings
from bundler.target.table_file import load_table_from, shipped_table_path
from tests.conftest import run_cli
from tests.hostile.harness import assert_refused, run

FIXTURE = Path(__file__).parent / "data" / "pypi-facts.json"


@pytest.fixture(scope="module")
def facts() -> dict:
    return json.loads(FIXTURE.read_text())


def test_the_shipped_table_agrees_with_the_recorded_metadata(facts):
    result = run_cli("compat", "check", "--offline", str(FIXTURE), "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["disagreements"] == [] and report["releases"] == len(facts["projects"]["torch"])
    # what the metadata cannot settle is said, field by field, never passed off as checked
    unchecked = {(item["torch"], item["field"]) for item in report["unchecked"]}
    assert ("2.14.1", "torchvision") in unchecked  # torchvision 0.29.1 pins torch>=2.14.0, not ==2.14.1
    assert ("2.11.0", "torchaudio") in unchecked  # torchaudio 2.11.0 pins no torch at all
    assert all(field in ("torchvision", "torchaudio") for _, field in unchecked)


def test_every_pypi_fact_of_a_row_is_what_its_wheels_say(facts):
    """Each row's PyPI fields against the raw metadata, read here without bundler's derivation."""
    table = load_table_from(shipped_table_path())
    for version, entry in facts["projects"]["torch"].items():
        release = table.releases[version]
        assert release.pypi_cuda == (entry["linux_x86_64"]["version_py"]["cuda"] or "cpu"), version
        assert release.pypi_cuda_aarch64 == (entry["linux_aarch64"]["version_py"]["cuda"] or "cpu"), version
        tags = {wheel.split("-")[-3] for wheel in entry["wheels"] if wheel.endswith("x86_64.whl")}
        assert {f"cp{p.replace('.', '')}" for p in release.python} == {t for t in tags if not t.endswith("t")}, version
        triton = [r for r in entry["linux_x86_64"]["requires_dist"] if r.startswith("triton")]
        assert triton and release.triton in triton[0].replace(" ", "").replace("(", "").replace(")", ""), (version, triton)


@pytest.mark.parametrize(
    "row, field, table_value, pypi_value",
    [
        ({"pypi_cuda": "12.6"}, "pypi_cuda", "12.6", "12.8"),
        ({"pypi_cuda_aarch64": "12.8"}, "pypi_cuda_aarch64", "12.8", "cpu"),
        ({"torchvision": "0.24.0"}, "torchvision", "0.24.0", "0.24.1"),
        ({"triton": "3.5.0"}, "triton", "3.5.0", "3.5.1"),
        ({"python": ["3.10", "3.11"]}, "python", "3.10, 3.11", "3.10, 3.11, 3.12, 3.13, 3.14"),
        ({"setuptools": "never"}, "setuptools", "never", "python>=3.12"),
    ],
)
def test_a_wrong_row_is_reported_with_both_values(tmp_path, monkeypatch, row, field, table_value, pypi_value):
    values = {
        "torch": "2.9.1",
        "torchvision": "0.24.1",
        "torchaudio": "2.9.1",
        "triton": "3.5.1",
        "cuda": ["12.8"],
        "pypi_cuda": "12.8",
        "pypi_cuda_aarch64": "cpu",
        "python": ["3.10", "3.11", "3.12", "3.13", "3.14"],
        "setuptools": "python>=3.12",
    } | row
    import tomlkit

    mine = tmp_path / "mine.toml"
    mine.write_text(tomlkit.dumps({"release": [values]}))
    monkeypatch.setenv("BUNDLER_COMPAT", str(mine))
    outcome = run(["compat", "check", "--offline", str(FIXTURE), "--json"], cwd=tmp_path)
    assert outcome.code == 1, outcome.stderr
    document = json.loads(outcome.stdout)
    assert "1 disagreement" in document["error"]["message"]
    found = [(d["torch"], d["field"], d["table"], d["pypi"]) for d in document["disagreements"]]
    assert found == [("2.9.1", field, table_value, pypi_value)]
    assert f"torch 2.9.1 {field}" in outcome.stderr


def test_a_release_missing_from_the_table_and_a_row_pypi_lacks_are_reported(facts):
    table = load_table_from(shipped_table_path())
    fewer = json.loads(json.dumps(facts))
    del fewer["projects"]["torch"]["2.9.0"]
    findings = compare(table, fewer)
    assert [(f.torch, f.kind) for f in findings if f.kind != "unchecked"] == [("2.9.0", "not-on-pypi")]
    del table.releases["2.9.1"]
    assert ("2.9.1", "missing-row") in [(f.torch, f.kind) for f in compare(table, facts)]


def test_derivation_rules_on_a_small_synthetic_release():
    facts = {
        "projects": {
            "torch": {
                "3.0.0": {
                    "wheels": ["torch-3.0.0-cp312-cp312-manylinux_2_28_x86_64.whl", "torch-3.0.0-cp313-cp313t-manylinux_2_28_x86_64.whl"],
                    "linux_x86_64": {
                        "requires_dist": ['triton~=4.0.0; platform_system == "Linux"', 'setuptools; python_version >= "3.12"'],
                        "version_py": {"__version__": "3.0.0+cu140", "cuda": "14.0", "hip": None},
                    },
                }
            },
            "torchvision": {"0.40.0": {"linux_x86_64": {"requires_dist": ["torch (==3.0.0)"]}}},
            "torchaudio": {"3.0.0": {"linux_x86_64": {"requires_dist": ["torch>=3.0"]}}},
        }
    }
    derived = derive(facts)["3.0.0"]
    assert derived == {
        "pypi_cuda": "14.0",
        "pypi_cuda_aarch64": "",  # no aarch64 wheel at all
        "python": "3.12",  # the free-threaded cp313t wheel is another ABI
        "triton": "~=4.0.0",
        "setuptools": "python>=3.12",
        "torchvision": "0.40.0",
        "torchaudio": None,  # a floor pairs with no release
    }


def test_refusals_of_the_command(tmp_path):
    bad = tmp_path / "facts.json"
    bad.write_text('{"schema": 99}')
    assert_refused(run(["compat", "check", "--offline", str(bad)], cwd=tmp_path), 3, str(bad))
    both = run(["compat", "check", "--offline", str(FIXTURE), "--record", str(tmp_path / "x.json")], cwd=tmp_path, watched=(tmp_path,))
    assert_refused(both, 2, "--offline and --record")


@pytest.mark.slow
def test_version_py_is_read_from_pypis_wheel_by_range_requests(facts):
    """Live: the reader the fixture was recorded with, on one 900 MB wheel (a few kB read)."""
    settings = PipSettings(cert="/etc/ssl/certs/ca-certificates.crt" if Path("/etc/ssl/certs/ca-certificates.crt").is_file() else "")
    wheel = facts["projects"]["torch"]["2.9.1"]["linux_x86_64"]["wheel"]
    file = next(f for f in project_files("https://pypi.org/simple", "torch", settings) if f.filename == wheel)
    assert (
        version_py(wheel_member(file.url, "torch/version.py", settings))
        == facts["projects"]["torch"]["2.9.1"]["linux_x86_64"]["version_py"]
    )
