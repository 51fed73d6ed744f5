"""The generated project's pilot, run for real with the CPU torch build."""

import json

import pytest

from tests.conftest import run_pilot


def read_jsonl(path):
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    from tests.conftest import scaffold_project

    project = scaffold_project(tmp_path_factory.mktemp("pilot") / "example")
    result = run_pilot(project, "--run-id", "trial-1")
    assert result.returncode == 0, result.stderr
    return project, project / "runs" / "trial-1"


def test_run_accounts_for_all_twelve_inputs(finished_run):
    _, run = finished_run
    summary = json.loads((run / "summary.json").read_text())
    assert summary["inputs"] == 12
    assert summary["accepted"] + summary["rejected"] == 12
    assert summary["rejected_ids"] == ["doc-12"] == summary["planned_rejections"]
    assert all(summary["checks"].values())
    assert summary["status"] == "complete"


def test_predictions_one_allowed_category_per_accepted_document(finished_run):
    project, run = finished_run
    categories = json.loads((project / "config/pilot.json").read_text())["categories"]
    predictions = read_jsonl(run / "predictions.jsonl")
    assert sorted(p["id"] for p in predictions) == [f"doc-{i:02d}" for i in range(1, 12)]
    assert all(p["category"] in categories and 0.0 < p["score"] <= 1.0 for p in predictions)


def test_the_single_update_learns_the_labelled_categories(finished_run):
    project, run = finished_run
    labels = {d["id"]: d["label"] for d in json.loads((project / "data/pilot/MANIFEST.json").read_text())["documents"]}
    predictions = read_jsonl(run / "predictions.jsonl")
    correct = sum(p["category"] == labels[p["id"]] for p in predictions)
    assert correct >= 10, predictions


def test_rejection_has_its_reason(finished_run):
    _, run = finished_run
    assert read_jsonl(run / "rejections.jsonl") == [{"id": "doc-12", "reason": "not UTF-8 text: invalid byte 0x96 at offset 14"}]


def test_manifest_records_what_a_reviewer_needs(finished_run):
    project, run = finished_run
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["run_id"] == "trial-1"
    assert manifest["status"] == "complete"
    assert manifest["config"] == json.loads((project / "config/pilot.json").read_text())
    assert len(manifest["config_sha256"]) == 64 and len(manifest["input_manifest_sha256"]) == 64
    assert manifest["environment"]["torch"].startswith("2.13.0")
    assert manifest["started"] <= manifest["finished"]
    assert "--run-id" in manifest["command"]
    assert "code_revision" in manifest


def test_checkpoint_holds_the_training_state(finished_run):
    import torch

    _, run = finished_run
    state = torch.load(run / "checkpoint.pt", weights_only=True)
    assert set(state) == {"model", "progress", "categories", "config_sha256"}
    assert set(state["model"]) >= {"weights", "optimizer", "scheduler", "rng"}
    assert state["progress"]["steps"] == 1
    assert len(state["progress"]["trained_ids"]) == 11
    assert state["model"]["weights"]["weight"].shape == (4, 4096)


def test_the_run_carries_every_accepted_text_for_its_reload(finished_run):
    project, run = finished_run
    texts = json.loads((run / "texts.json").read_text())["documents"]
    assert [t["id"] for t in texts] == [f"doc-{i:02d}" for i in range(1, 12)]
    for entry in texts:
        assert entry["text"] == (project / "data/pilot" / f"{entry['id']}.txt").read_text()


def test_evidence_files_take_the_permissions_the_umask_allows(finished_run):
    import os

    _, run = finished_run
    umask = os.umask(0)
    os.umask(umask)
    modes = {p.name: oct(p.stat().st_mode & 0o777) for p in run.iterdir()}
    assert set(modes.values()) == {oct(0o666 & ~umask)}, modes  # 0644 under the usual 022: readable by a reviewer


def test_default_run_ids_are_unique_and_sortable(example_project):
    first = run_pilot(example_project)
    second = run_pilot(example_project)
    assert first.returncode == 0 and second.returncode == 0, second.stderr
    runs = sorted(p.name for p in (example_project / "runs").iterdir() if p.is_dir())
    assert len(runs) == 2 and runs[0] < runs[1]


class TestErrors:
    def test_existing_run_id_is_refused_and_kept(self, finished_run):
        project, run = finished_run
        before = {p.name: p.read_bytes() for p in run.iterdir()}
        result = run_pilot(project, "--run-id", "trial-1")
        assert result.returncode == 5
        assert "run trial-1 already exists" in result.stderr
        assert {p.name: p.read_bytes() for p in run.iterdir()} == before

    def test_missing_config(self, example_project):
        (example_project / "config/pilot.json").unlink()
        result = run_pilot(example_project)
        assert result.returncode == 2 and "pilot.json not found" in result.stderr

    def test_malformed_config(self, example_project):
        (example_project / "config/pilot.json").write_text('{"categories": [')
        result = run_pilot(example_project)
        assert result.returncode == 2 and "is not valid JSON" in result.stderr

    def test_config_with_an_absolute_path(self, example_project):
        path = example_project / "config/pilot.json"
        config = json.loads(path.read_text())
        path.write_text(json.dumps(config | {"data_dir": "/home/alice/data"}))
        result = run_pilot(example_project)
        assert result.returncode == 2 and "data_dir = '/home/alice/data'" in result.stderr

    def test_missing_data_folder(self, example_project):
        import shutil

        shutil.rmtree(example_project / "data/pilot")
        result = run_pilot(example_project)
        assert result.returncode == 3 and "data folder" in result.stderr and "not found" in result.stderr
        assert not any(p.is_dir() for p in (example_project / "runs").iterdir())

    def test_modified_input(self, example_project):
        with open(example_project / "data/pilot/doc-04.txt", "a") as handle:
            handle.write("one more sentence\n")
        result = run_pilot(example_project)
        assert result.returncode == 3 and "doc-04" in result.stderr and "was modified" in result.stderr

    def test_duplicate_document_id(self, example_project):
        path = example_project / "data/pilot/MANIFEST.json"
        manifest = json.loads(path.read_text())
        manifest["documents"][5]["id"] = "doc-03"
        path.write_text(json.dumps(manifest))
        result = run_pilot(example_project)
        assert result.returncode == 3 and "'doc-03' appears twice" in result.stderr

    def test_unlisted_file_in_the_input(self, example_project):
        (example_project / "data/pilot/doc-13.txt").write_text("smuggled in")
        result = run_pilot(example_project)
        assert result.returncode == 3 and "doc-13.txt" in result.stderr

    def test_unplanned_rejection_fails_the_accounting(self, example_project):
        path = example_project / "config/pilot.json"
        config = json.loads(path.read_text())
        path.write_text(json.dumps(config | {"limits": {"min_chars": 250, "max_chars": 60000}}))
        result = run_pilot(example_project, "--run-id", "strict")
        assert result.returncode == 4 and "rejections_as_planned" in result.stderr
        summary = json.loads((example_project / "runs/strict/summary.json").read_text())
        assert summary["status"] == "failed"
        assert "doc-10" in summary["rejected_ids"]
        assert summary["accepted"] + summary["rejected"] == 12


CENTROIDS = '''"""Another model behind the same contract: the nearest centroid of hashed token counts."""

import re
import zlib

import torch


class Centroids:
    def __init__(self, categories: int, buckets: int) -> None:
        self.buckets, self.centroids = buckets, torch.zeros(categories, buckets)

    def vector(self, text: str) -> torch.Tensor:
        vector = torch.zeros(self.buckets)
        for token in re.findall(r"[a-z0-9]+", text.lower()):
            vector[zlib.crc32(token.encode()) % self.buckets] += 1
        return vector / vector.norm().clamp_min(1e-12)

    def fit(self, texts, labels, on_step) -> None:
        for text, label in zip(texts, labels):
            self.centroids[label] += self.vector(text)
        self.centroids /= self.centroids.norm(dim=1, keepdim=True).clamp_min(1e-12)
        on_step(1, 0.0)

    def predict(self, text: str):
        score, index = torch.softmax(10 * (self.centroids @ self.vector(text)), dim=0).max(dim=0)
        return int(index), float(score)

    def state(self) -> dict:
        return {"centroids": self.centroids, "buckets": self.buckets}


def create(categories, parameters):
    return Centroids(len(categories), parameters["model"]["buckets"])


def restore(state):
    model = Centroids(state["centroids"].shape[0], state["buckets"])
    model.centroids = state["centroids"]
    return model
'''


def test_another_model_keeping_the_contract_gets_the_same_evidence(tmp_path):
    """Only model.py, pilot.py's PARAMETERS and config/pilot.json change: evidence/ is untouched."""
    from tests.conftest import run_cli, scaffold_project

    project = scaffold_project(tmp_path / "example")
    (project / "src/example/model.py").write_text(CENTROIDS)
    entry = project / "src/example/pilot.py"
    start = entry.read_text().index("PARAMETERS = {")
    end = entry.read_text().index("}\n\n\n", start) + 2
    entry.write_text(entry.read_text()[:start] + 'PARAMETERS = {"model": {"buckets": (int, 1, 65536)}}\n' + entry.read_text()[end:])
    path = project / "config/pilot.json"
    config = json.loads(path.read_text())
    config["model"] = {"buckets": 1024}
    del config["training"]
    path.write_text(json.dumps(config, indent=2))

    result = run_pilot(project, "--run-id", "centroids")
    assert result.returncode == 0, result.stderr
    verified = run_cli("runs", "verify", str(project / "runs/centroids"), "--json")
    assert verified.returncode == 0, verified.stderr
    assert "re-predicted all 11 accepted documents" in verified.stdout
