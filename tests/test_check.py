"""`bundler check`: each audit item passes on a sound project and fails on its own fault."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from bundler.portability import check
from bundler.target.bundle import load_bundle
from tests.conftest import REPO, run_cli
from tests.paths_support import build_tree

BUNDLE_TOML = """\
[project]
name = "Pilot"
package = "pilot_app"
entry = "PYTHONPATH=src python -m pilot_app.pilot --config config/pilot.json"

[target]
backend = "cpu"
accelerator = ""
torch = "2.13.0"
python = "3.11"
"""
README = "# Pilot\n\n## Install\npip install -r requirements-rebuild.txt\n\n## Launch\n...\n\n## Check\nbundler check\n"
DOCKERIGNORE = (REPO / "template/{{cookiecutter.project_slug}}/.dockerignore").read_text()  # what `bundler new` writes
PILOT = "PARAMETERS = {'model': {'seed': (int, 0, 2**32 - 1)}}\nprint('pilot')\n"
DIAGNOSTICS = "import argparse\nargparse.ArgumentParser(description='staged checks').parse_args()\n"


def _documents() -> dict[str, str]:
    return {f"doc-{n:02d}.txt": f"Document {n}: invoice number {n * 7}.\n" for n in range(1, 13)}


def sound_project(root: Path) -> Path:
    documents = _documents()
    manifest = {
        "version": 1,
        "documents": [
            {
                "id": name.removesuffix(".txt"),
                "file": name,
                "sha256": hashlib.sha256(text.encode()).hexdigest(),
                "bytes": len(text.encode()),
                "label": None if name == "doc-12.txt" else "invoice",
                "expect": "reject" if name == "doc-12.txt" else "accept",
                **({"reason": "empty after cleaning"} if name == "doc-12.txt" else {}),
            }
            for name, text in documents.items()
        ],
    }
    config = {
        "categories": ["invoice", "letter"],
        "data_dir": "data/pilot",
        "manifest": "data/pilot/MANIFEST.json",
        "runs_dir": "runs",
        "expected_documents": 12,
        "expected_rejections": 1,
        "limits": {"min_chars": 10, "max_chars": 1000},
        "model": {"seed": 1},
    }
    files = {
        "bundle.toml": BUNDLE_TOML,
        "README.md": README,
        ".dockerignore": DOCKERIGNORE,
        "requirements.in": "numpy\n",
        "config/pilot.json": json.dumps(config, indent=2) + "\n",
        "data/pilot/MANIFEST.json": json.dumps(manifest, indent=2) + "\n",
        "diagnostics/run.py": DIAGNOSTICS,
        "src/pilot_app/__init__.py": "",
        "src/pilot_app/pilot.py": PILOT,
        "runs/.gitkeep": "",
    }
    files.update({f"data/pilot/{name}": text for name, text in documents.items()})
    return build_tree(root, files)


@pytest.fixture
def project(tmp_path) -> Path:
    return sound_project(tmp_path / "pilot")


def statuses(root: Path) -> dict[str, str]:
    return {item.name: item.status for item in check.run_checks(load_bundle(root))}


def item(root: Path, name_start: str) -> check.Item:
    return next(i for i in check.run_checks(load_bundle(root)) if i.name.startswith(name_start))


def test_a_sound_project_passes_every_item_but_the_missing_lock(project):
    assert statuses(project) == {
        "no home paths": "pass",
        "lock present and fresh": "fail",
        "config/pilot.json valid and secret-free": "pass",
        "pilot inputs match their manifest": "pass",
        "diagnostics present and runnable": "pass",
        ".dockerignore covers secrets and runs/": "pass",
        "entry command declared": "pass",
        "README has install, launch and check sections": "pass",
        "template as new as the installed one": "not checked",
    }
    assert item(project, "lock").detail.startswith("missing:")


def test_cli_prints_one_line_per_item_and_exits_1(project):
    completed = run_cli("check", str(project))
    assert completed.returncode == 1
    lines = [line for line in completed.stderr.splitlines() if line.startswith("[")]
    assert len(lines) == 9
    assert "hint: Run `bundler lock`" in completed.stderr


def test_cli_json(project):
    completed = run_cli("check", str(project), "--json")
    report = json.loads(completed.stdout)
    assert report["ok"] is False
    assert [set(i) for i in report["items"]] == [{"name", "status", "detail", "hint"}] * 9


def test_cli_without_bundle_toml_is_a_project_file_error(tmp_path):
    completed = run_cli("check", str(tmp_path))
    assert completed.returncode == 3
    assert "bundle.toml not found" in completed.stderr


def test_home_path_fails(project):
    (project / "src/pilot_app/pilot.py").write_text('DATA = "/home/alice/data"\n')
    found = item(project, "no home paths")
    assert (found.status, found.detail) == ("fail", "1 machine-specific path(s), first src/pilot_app/pilot.py:1: /home/alice/data")


@pytest.mark.parametrize(
    "secret",
    [
        "sk-proj-" + "a1B2" * 8,
        "hf_" + "AbCd" * 9,
        "ghp_" + "x1Y2" * 9,
        "github_pat_" + "11ABC" * 6,
        "AKIA" + "ABCDEFGH12345678",
        "-----BEGIN OPENSSH PRIVATE KEY-----",
        "https://user:hunter2@example.com/data",
    ],
)
def test_secret_in_config_fails(project, secret):
    config = json.loads((project / "config/pilot.json").read_text())
    config["token"] = secret
    (project / "config/pilot.json").write_text(json.dumps(config))
    found = item(project, "config/")
    assert found.status == "fail"
    assert "token-looking values" in found.detail


def test_aws_secret_key_fails():
    assert check.find_secrets('{"aws_secret_access_key": "' + "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY" + '"}') == [
        "AWS secret access key"
    ]


def test_ordinary_config_values_are_not_secrets():
    assert check.find_secrets('{"model": "sk-learn", "url": "https://example.com/x", "seed": 42, "hf_model": "bert"}') == []


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"categories": []}, "categories must be a non-empty list of names, got a list"),
        ({"categories": ["a", "a"]}, "categories lists a name twice"),
        ({"data_dir": "/home/alice/pilot"}, "data_dir = '/home/alice/pilot' is an absolute path"),
        ({"runs_dir": "../runs"}, "runs_dir = '../runs' leads outside the project folder"),
        ({"expected_documents": 0}, "expected_documents = 0 is out of range: 1 to 1000000000"),
        ({"model": {"seed": 1, "sede": 2}}, "model.sede is not a known key"),
        ({"stop_rule": {}}, "stop_rule is not a known key"),
    ],
)
def test_invalid_config_fails(project, change, message):
    config = json.loads((project / "config/pilot.json").read_text()) | change
    (project / "config/pilot.json").write_text(json.dumps(config))
    found = item(project, "config/")
    assert found.status == "fail" and found.detail.startswith(f"config/pilot.json: {message}"), found.detail


def test_config_that_is_not_json_fails(project):
    (project / "config/pilot.json").write_text("{not json")
    found = item(project, "config/")
    assert found.status == "fail" and "pilot.json: the top level is not valid JSON" in found.detail


def test_a_changed_pilot_input_fails(project):
    (project / "data/pilot/doc-03.txt").write_text("edited\n")
    found = item(project, "pilot inputs")
    assert (found.status, found.detail) == ("fail", "doc-03.txt: sha256 differs from the manifest")


def test_manifest_count_ids_and_planned_reject(project):
    manifest_path = project / "data/pilot/MANIFEST.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["documents"][1]["id"] = "doc-01"
    manifest["documents"][11]["expect"] = "accept"
    del manifest["documents"][5]
    manifest_path.write_text(json.dumps(manifest))
    found = item(project, "pilot inputs")
    assert found.detail == "duplicate IDs: doc-01; 11 documents listed, 12 expected; 0 planned rejection(s), 1 expected"


def test_a_missing_pilot_input_fails(project):
    (project / "data/pilot/doc-07.txt").unlink()
    assert item(project, "pilot inputs").detail == "doc-07.txt: missing"


def test_diagnostics_that_do_not_run_fail(project):
    (project / "diagnostics/run.py").write_text("import no_such_module_anywhere\n")
    found = item(project, "diagnostics")
    assert found.status == "fail"
    assert "exited 1: ModuleNotFoundError" in found.detail


def test_missing_diagnostics_fail(project):
    (project / "diagnostics/run.py").unlink()
    assert item(project, "diagnostics").detail == "diagnostics/run.py not found"


def test_dockerignore_gaps_are_named(project):
    (project / ".dockerignore").write_text("*.pem\n.env\n")
    found = item(project, ".dockerignore")
    assert found.status == "fail"
    missed = [name for name in check.DOCKERIGNORE_SAMPLES if name not in (".env", "server.pem")]  # what the two patterns cover
    assert found.detail == "not excluded: " + ", ".join(missed)
    assert {"kaggle.json", ".huggingface/token", ".git-credentials"} <= set(missed)


def test_a_secret_file_the_dockerignore_lets_through_is_named(project):
    (project / ".dockerignore").write_text(DOCKERIGNORE.replace("**/kaggle.json\n", ""))
    (project / "kaggle.json").write_text('{"username": "u", "key": "k"}\n')
    found = item(project, ".dockerignore")
    assert found.status == "fail"
    assert found.detail.startswith("not excluded: kaggle.json (in the project)")


def test_dockerignore_negation_reincludes(project):
    (project / ".dockerignore").write_text(DOCKERIGNORE + "!.env.local\n")
    assert item(project, ".dockerignore").detail == "not excluded: .env.local"


def test_entry_module_must_exist(project):
    (project / "src/pilot_app/pilot.py").unlink()
    found = item(project, "entry")
    detail = "entry runs module pilot_app.pilot, but neither src/ nor the project root holds pilot_app/pilot.py"
    assert (found.status, found.detail) == ("fail", detail)


def test_readme_sections(project):
    (project / "README.md").write_text("Pilot\n=====\n\nInstall\n-------\nx\n\n## How to check\n")
    assert item(project, "README").detail == "no heading containing: launch"


def test_the_generated_example_project(tmp_path):
    dest = tmp_path / "example"
    made = subprocess.run([sys.executable, "-m", "bundler", "new", str(dest), "--no-input"], capture_output=True, text=True, check=False)
    assert made.returncode == 0, made.stderr
    result = statuses(dest)
    assert result.pop("lock present and fresh") == "fail"  # no lock before `bundler lock`
    assert set(result.values()) == {"pass"}, result
