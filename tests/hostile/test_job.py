"""Hostile input to `bundler job`: each case is refused with its exit code, one paragraph that
names the value and gives a hint, one JSON document, and nothing written or changed."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.hostile.harness import assert_refused, run
from tests.job_support import copy_project, locked_project

IMAGE = "registry.example.com/team/example:1"


@pytest.fixture
def project(tmp_path_factory, fake_index, tmp_path) -> Path:
    """A locked CUDA project ordering 4 lots of B200 (two cards each)."""
    return copy_project(locked_project(tmp_path_factory, fake_index, "cuda"), tmp_path / "project", card="B200", lots=4)


def refused(project: Path, args: list[str], code: int, *mentions: str, watched: tuple = ()) -> None:
    outcome = run(["job", *args, "--json"], cwd=project.parent, watched=(project, *watched))
    assert_refused(outcome, code, *mentions, json_mode=True)


@pytest.mark.parametrize(("nodes", "mention"), [("0", "'0'"), ("-1", "'-1'"), ("two", "'two'"), ("1.5", "'1.5'"), ("3", "--nodes 3")])
def test_nodes_that_do_not_split_the_lots(project, nodes, mention):
    refused(project, ["k8s", str(project), f"--nodes={nodes}", "--image", IMAGE], 2, mention, "--nodes")


def test_the_refusal_of_a_split_lists_the_splits_that_work(project):
    outcome = run(["job", "sky", str(project), "--nodes", "3", "--image", IMAGE], cwd=project.parent, watched=(project,))
    assert_refused(outcome, 2, "does not split the 4 lot(s)")
    assert "Use one of: 1, 2, 4" in outcome.stderr


def test_a_card_the_catalog_does_not_list(project):
    plan = project / "plan.toml"
    plan.write_text(plan.read_text().replace('card = "B200"', 'card = "RTX 9999"'))
    refused(project, ["sky", str(project), "--image", IMAGE], 3, "RTX 9999", "catalog")


def test_a_card_of_the_other_vendor(project):
    plan = project / "plan.toml"
    plan.write_text(plan.read_text().replace('card = "B200"', 'card = "MI300X"'))
    refused(project, ["k8s", str(project), "--image", IMAGE], 3, "MI300X (amd)", "cuda")


def test_no_plan(project):
    (project / "plan.toml").unlink()
    refused(project, ["slurm", str(project), "--image", IMAGE], 3, "plan.toml not found")


@pytest.mark.parametrize("lock_change", ["missing", "stale"])
def test_no_fresh_lock(project, lock_change):
    if lock_change == "missing":
        (project / "requirements-rebuild.txt").unlink()
    else:
        (project / "requirements.in").write_text((project / "requirements.in").read_text() + "rich\n")
    refused(project, ["k8s", str(project), "--image", IMAGE], 6, lock_change)


@pytest.mark.parametrize("engine", ["sky", "k8s", "slurm"])
@pytest.mark.parametrize(
    "image", ["registry.example.com/app:1 ; rm -rf ~", 'registry.example.com/app:"1"', "reg/app:1\nrun: evil", "Team/App"]
)
def test_image_references_with_spaces_quotes_or_capitals(project, engine, image):
    refused(project, [engine, str(project), "--image", image], 2, "--image", "is not an image reference")


@pytest.mark.parametrize("engine", ["sky", "k8s"])
def test_an_archive_where_a_registry_is_needed(project, engine):
    refused(project, [engine, str(project), "--image", "example.tar"], 2, "is a file", "bundler build --push")


def test_an_output_path_under_a_file(project, tmp_path):
    blocker = tmp_path / "blocker"
    blocker.write_text("a file, not a folder")
    refused(project, ["k8s", str(project), "--image", IMAGE, "-o", str(blocker / "job.yaml")], 10, str(blocker), watched=(tmp_path,))


def test_an_output_path_that_is_a_folder(project, tmp_path):
    folder = tmp_path / "jobs"
    folder.mkdir()
    refused(project, ["sky", str(project), "--image", IMAGE, "-o", str(folder)], 2, f"-o {folder} is a folder", watched=(tmp_path,))


def test_a_file_bundler_did_not_write_is_never_overwritten(project):
    refused(project, ["slurm", str(project), "--image", IMAGE, "-o", str(project / "README.md")], 5, "README.md", "is not a file")


def test_a_job_file_edited_by_hand_is_never_overwritten(project):
    made = run(["job", "k8s", str(project), "--image", IMAGE], cwd=project.parent)
    assert made.code == 0, made.stderr
    job_file = project / "job-k8s.yaml"
    job_file.write_text(job_file.read_text().replace("backoffLimit: 0", "backoffLimit: 3"))
    refused(project, ["k8s", str(project), "--image", IMAGE], 5, "was edited after")


def test_an_entry_that_is_not_a_command(project):
    bundle = project / "bundle.toml"
    bundle.write_text(bundle.read_text().replace("--config config/pilot.json", "--config 'unclosed"))
    refused(project, ["sky", str(project), "--image", IMAGE], 3, "[project] entry", "does not parse")
