"""Received = ordered: plan.toml's [package] and the catalog's cards per lot against the GPUs
the container sees (stage 4), and the subset TOML reader on the files bundler generates."""

from __future__ import annotations

import json
import os

import pytest
import tomllib

from tests.conftest import scaffold_project
from tests.diagnostics_support import GB, H200, MI300X, ROCM_72, FakeProbe, gpu_probe, make_checkup, ordered, run_stage, write_bundle

# isort: split
from bdiag import cli, datasheet, minitoml
from bdiag.checkup import load_toml
from bdiag.order import OrderError, read_order
from bdiag.stages import device

B200 = dict(H200, name="NVIDIA B200", total_memory=191 * GB, free_memory=190 * GB, capability=[10, 0])


def gpus(info: dict, count: int, **observed) -> FakeProbe:
    return gpu_probe(device_count=count, device_properties=lambda torch_, index: dict(info, index=index), **observed)


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    return scaffold_project(tmp_path_factory.mktemp("order") / "p", backend="cuda", accelerator="13.0")


def set_package(project, card: str, lots: int) -> None:
    plan = project / "plan.toml"
    text = plan.read_text()
    text = text.replace('card = "RTX 4090"', f'card = "{card}"').replace("lots = 1 ", f"lots = {lots} ")
    plan.write_text(text)


# --- reading the order ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["bundle.toml", "plan.toml", "catalog.toml"])
def test_subset_reader_reads_the_generated_files_like_tomllib(project, name):
    text = (project / name).read_text()
    assert minitoml.loads(text) == tomllib.loads(text)


def test_every_catalog_card_is_a_datasheet_row_with_the_same_memory(project):
    catalog = tomllib.loads((project / "catalog.toml").read_text())["cards"]
    for card, entry in catalog.items():
        row = datasheet.card_row(card)
        assert row is not None, f"{card} of the template's catalog has no row in gpus.json"
        assert row["memory_gb"] == entry["memory_gb"], card


def test_cards_per_lot_comes_from_the_catalog(tmp_path, project):
    copy = tmp_path / "p"
    copy.mkdir()
    for name in ("plan.toml", "catalog.toml"):
        (copy / name).write_text((project / name).read_text())
    assert read_order(str(copy), load_toml).cards == 1
    set_package(copy, "B200", 3)
    order = read_order(str(copy), load_toml)
    assert (order.card, order.lots, order.cards_per_lot, order.cards) == ("B200", 3, 2, 6)
    assert order.describe() == "3 lots of B200 × 2 cards per lot = 6 cards"
    assert read_order(str(tmp_path), load_toml) is None  # no plan.toml: nothing ordered


@pytest.mark.parametrize(
    "plan, catalog, named",
    [
        ("[package\ncard = 1\n", None, "does not parse as TOML"),
        ('[package]\ncard = "H300"\nlots = 1\n', None, "'H300', which the catalog"),
        ('[package]\ncard = "H200"\nlots = 0\n', None, "lots must be a whole number"),
        ('[package]\ncard = "H200"\nlots = true\n', None, "lots must be a whole number"),
        ('catalog = "missing.toml"\n[package]\ncard = "H200"\nlots = 1\n', None, "missing.toml, which does not exist"),
        ('[package]\ncard = "H200"\nlots = 1\n', '[cards."H200"]\ncards_per_lot = 0\n', "cards_per_lot must be a whole number"),
        ("days = 3\n", None, "has no [package] table"),
    ],
)
def test_a_bad_plan_is_refused_naming_the_file(tmp_path, plan, catalog, named):
    (tmp_path / "plan.toml").write_text(plan)
    (tmp_path / "catalog.toml").write_text(catalog or '[cards."H200"]\ncards_per_lot = 1\n')
    with pytest.raises(OrderError) as caught:
        read_order(str(tmp_path), load_toml)
    assert named in caught.value.message
    assert str(tmp_path) in caught.value.message and caught.value.hint


# --- judging what was received --------------------------------------------------------------------


def test_one_b200_lot_is_two_cards():
    result = run_stage(device, make_checkup(gpus(B200, 2), order=ordered("B200", 1, 2)))
    assert result.status == "pass", result.messages
    assert result.values["order"]["line"] == "ordered 1 lot of B200 × 2 cards per lot = 2 cards; received 2 × NVIDIA B200 — as ordered"


def test_fewer_gpus_than_ordered_fails_naming_both_figures_and_the_cause():
    probe = gpus(B200, 1, environ={"CUDA_VISIBLE_DEVICES": "0"})
    result = run_stage(device, make_checkup(probe, order=ordered("B200", 1, 2)))
    assert result.status == "fail"
    assert "= 2 cards but the container sees 1" in result.reason
    assert "CUDA_VISIBLE_DEVICES=0 hides the others" in result.hint and "--gpus all" in result.hint
    assert result.values["order"]["verdict"] == "fail" and result.values["order"]["received"] == 1


def test_mig_slices_are_named_as_the_cause():
    slice_ = dict(H200, name="NVIDIA H200 MIG 1g.18gb", total_memory=18 * GB)
    result = run_stage(device, make_checkup(gpus(slice_, 1), order=ordered("H200", 2)))
    assert "MIG slices are visible instead of whole cards" in result.hint


def test_more_gpus_than_ordered_fails_with_the_billing_hint():
    result = run_stage(device, make_checkup(gpus(H200, 4), order=ordered("H200", 2)))
    assert result.status == "fail" and "sees 4" in result.reason
    assert "billed for 4" in result.hint and "CUDA_VISIBLE_DEVICES" in result.hint


@pytest.mark.parametrize(
    "card, name",
    [
        ("H100 SXM", "NVIDIA H100 PCIe"),
        ("H200", "NVIDIA H200 NVL"),
        ("A100 80GB SXM", "NVIDIA A100-SXM4-40GB"),
        ("L40S", "NVIDIA L4"),
        ("RTX 5090", "NVIDIA GeForce RTX 4090"),
    ],
)
def test_another_model_than_ordered_fails(card, name):
    probe = gpu_probe(device_properties=dict(H200, name=name))
    result = run_stage(device, make_checkup(probe, order=ordered(card)))
    assert result.status == "fail"
    assert f"ordered {card} but received {name}" in result.reason
    assert "another offer" in result.hint


@pytest.mark.parametrize(
    "card, name",
    [
        ("H100 SXM", "NVIDIA H100 80GB HBM3"),
        ("A100 80GB PCIe", "NVIDIA A100 80GB PCIe"),
        ("A6000", "NVIDIA RTX A6000"),
        ("L4", "NVIDIA L4"),
    ],
)
def test_rental_spellings_of_the_ordered_card_pass(card, name):
    row = datasheet.match_gpu(name)
    info = dict(H200, name=name, total_memory=int(row["memory_gb"] * GB))
    result = run_stage(device, make_checkup(gpu_probe(device_properties=info), order=ordered(card)))
    assert result.values["order"]["verdict"] == "pass", result.messages


def test_rocm_visible_devices_are_named():
    probe = gpus(MI300X, 1, torch_versions=ROCM_72, arch_list=["gfx942"], environ={"HIP_VISIBLE_DEVICES": "3"})
    result = run_stage(device, make_checkup(probe, "rocm", order=ordered("MI300X", 2)))
    assert result.status == "fail" and "HIP_VISIBLE_DEVICES=3" in result.hint and "--device=/dev/kfd" in result.hint


def test_without_a_plan_the_gpus_are_reported_but_not_judged():
    result = run_stage(device, make_checkup(gpu_probe(), order=None))
    assert result.status == "warn" and "no plan.toml" in result.reason and "--project" in result.hint
    assert result.values["order"]["line"] == "no plan.toml; received 1 × NVIDIA H200"


def test_on_cpu_the_order_is_recorded_not_compared():
    result = run_stage(device, make_checkup(FakeProbe(), "cpu", order=ordered("B200", 1, 2)))
    assert result.status == "skip"
    assert result.values["order"]["line"] == "ordered 1 lot of B200 × 2 cards per lot = 2 cards; not compared here: backend cpu"


# --- through run.py's command line ------------------------------------------------------------------


def run_main(project, probe, tmp_path) -> tuple[int, dict]:
    out = tmp_path / "report.json"
    argv = ["--project", str(project), "--backend", "cuda", "--json", str(out), "--results", str(tmp_path / "runs")]
    code = cli.main(argv, probe=probe, stream=open(os.devnull, "w"))
    return code, json.loads(out.read_text())


def test_a_box_with_half_the_ordered_cards_exits_14_with_the_order_line(tmp_path, project):
    copy = scaffold_project(tmp_path / "p", backend="cuda", accelerator="13.0")
    set_package(copy, "B200", 1)
    probe = gpus(B200, 1, installed_distributions={}, pip_check=(True, 0, ""))
    code, report = run_main(copy, probe, tmp_path)
    assert code == 14 and report["first_failure"] == "device"
    assert report["order"]["line"] == "ordered 1 lot of B200 × 2 cards per lot = 2 cards; received 1 × NVIDIA B200 — differs"
    assert report["stages"][0]["values"]["plan"] == str(copy / "plan.toml")


def test_a_plan_that_does_not_parse_fails_stage_1(tmp_path):
    write_bundle(tmp_path, backend="cuda", accelerator="13.0")
    (tmp_path / "plan.toml").write_text('[package]\ncard = "H200\n')
    code, report = run_main(tmp_path, gpu_probe(), tmp_path)
    assert code == 11 and report["first_failure"] == "interpreter"
    assert f"{tmp_path / 'plan.toml'} does not parse as TOML" in report["stages"][0]["messages"][0]
