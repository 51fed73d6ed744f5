"""`bundler paths --fix`: exact rewrites, nothing lost, idempotent, and the code still runs."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from bundler.portability import fix as pathfix
from bundler.portability.classify import read_env_local
from bundler.portability.rewrite import NOTEBOOK_IMPORT, PACKAGE_IMPORT
from bundler.portability.support import helper_source
from tests.conftest import run_cli
from tests.paths_support import LAPTOP_REPO, build_tree


@pytest.fixture
def laptop_repo(tmp_path) -> Path:
    return build_tree(tmp_path / "laptop_repo", LAPTOP_REPO)


def tree_digest(root: Path) -> dict[str, str]:
    digest = {}
    for folder, _, names in os.walk(root):
        for name in names:
            path = Path(folder) / name
            digest[str(path.relative_to(root))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return digest


def test_dry_run_changes_nothing(laptop_repo):
    before = tree_digest(laptop_repo)
    completed = run_cli("paths", str(laptop_repo))
    assert completed.returncode == 1
    assert "`bundler paths --fix` rewrites them" in completed.stderr
    assert tree_digest(laptop_repo) == before


def test_fix_rewrites_python_exactly(laptop_repo):
    completed = run_cli("paths", str(laptop_repo), "--fix", "--json")
    assert completed.returncode == 0, completed.stderr
    assert (laptop_repo / "src/app/train.py").read_text() == (
        '"""Train the classifier."""\n' + PACKAGE_IMPORT + "import os\n"
        "from pathlib import Path\n"
        "\n"
        'DATA = param_path("DATASETS_ROOT", "train.csv")\n'
        'CKPT = param_path("CHECKPOINTS_ROOT")\n'
        'CACHE = Path(param_path("HOME_ROOT")) / ".cache"\n'
        'MODEL = param_path("MODELS_ROOT", "m.pt")\n'
        'URL = "https://example.com/home/alice/data.csv"\n'
        'HOMEWORK = "/homework/notes.txt"\n'
        'SYSTEM = "/usr/share/dict/words"\n'
        'OUT = param_path("EXPERIMENT_ROOT", "out")  # results go here\n'
        'SCRATCH = "/tmp/scratch"\n'
        'WSL = param_path("CORPUS_ROOT")\n'
        "MASK = ~0x0F / 2\n"
    )
    assert (laptop_repo / "src/app/_bundle_paths.py").read_text() == helper_source(2)


def test_fix_rewrites_configs_and_scripts_exactly(laptop_repo):
    assert run_cli("paths", str(laptop_repo), "--fix").returncode == 0
    assert (laptop_repo / "config/train.yaml").read_text() == (
        "data_dir: ${DATASETS_ROOT_2}\noutput_dir: runs/exp1\ndocs_url: https://github.com/home/x\n"
    )
    settings = json.loads((laptop_repo / "config/settings.json").read_text())
    assert settings == {"model_dir": "${MODELS_ROOT}", "home_page": "http://example.org/Users/bob"}
    assert (laptop_repo / "scripts/run.sh").read_text() == (
        "#!/bin/sh\npython -m app.train --data ${DATASETS_ROOT_3}\ncp results.json ${RESULTS_ROOT}/\n"
    )
    assert (laptop_repo / "requirements.txt").read_text() == "numpy~=1.26\n-e ${SRC_ROOT}/mylib\n"
    # documentation is reported, never rewritten
    assert (laptop_repo / "README.md").read_text() == LAPTOP_REPO["README.md"]


def test_fix_rewrites_a_notebook_and_keeps_it_valid(laptop_repo):
    assert run_cli("paths", str(laptop_repo), "--fix").returncode == 0
    notebook = json.loads((laptop_repo / "notebooks/explore.ipynb").read_text())
    cell = notebook["cells"][0]
    assert cell["source"] == [
        NOTEBOOK_IMPORT,
        "import pandas as pd\n",
        'df = pd.read_csv(param_path("DATASETS_ROOT", "train.csv"))\n',
    ]
    assert cell["outputs"][0]["text"] == ["saved to ${DATASETS_ROOT}/clean.csv\n"]  # scrubbed
    assert notebook["metadata"]["papermill"]["input_path"] == "notebooks/explore.ipynb"  # project-relative
    assert (laptop_repo / "notebooks/_bundle_paths.py").read_text() == helper_source(1)


def test_nothing_is_lost(laptop_repo):
    originals = {name: (laptop_repo / name).read_bytes() for name in LAPTOP_REPO}
    report = json.loads(run_cli("paths", str(laptop_repo), "--fix", "--json").stdout)
    fix = report["fix"]
    assert read_env_local(laptop_repo / ".env.local") == {
        "CHECKPOINTS_ROOT": "~/checkpoints",
        "CORPUS_ROOT": "/mnt/c/Users/bob/corpus",
        "DATASETS_ROOT": "/home/alice/datasets",
        "DATASETS_ROOT_2": "/Users/alice/datasets",
        "DATASETS_ROOT_3": "$HOME/datasets",
        "EXPERIMENT_ROOT": "/tmp/experiment",
        "HOME_ROOT": "~",
        "MODELS_ROOT": "C:\\Users\\bob\\models",
        "RESULTS_ROOT": "~/results",
        "SRC_ROOT": "/home/alice/src",
    }
    backups = laptop_repo / fix["backup_dir"]
    changed = [c["file"] for c in fix["changes"] if c["status"] == "fixed"]
    assert sorted(changed) == sorted(
        ["config/settings.json", "config/train.yaml", "notebooks/explore.ipynb", "requirements.txt", "scripts/run.sh", "src/app/train.py"]
    )
    for name in changed:
        assert (backups / name).read_bytes() == originals[name]
    gitignore = (laptop_repo / ".gitignore").read_text().splitlines()
    assert ".env.local" in gitignore and ".bundler/" in gitignore
    declared = json.loads((laptop_repo / "config/paths.json").read_text())["paths"]
    assert declared["DATASETS_ROOT"] == "${DATASETS_ROOT}" and len(declared) == 10


def test_second_fix_changes_nothing(laptop_repo):
    assert run_cli("paths", str(laptop_repo), "--fix").returncode == 0
    after_first = tree_digest(laptop_repo)
    completed = run_cli("paths", str(laptop_repo), "--fix", "--json")
    assert completed.returncode == 0
    assert json.loads(completed.stdout)["fix"] is None
    assert tree_digest(laptop_repo) == after_first


def test_parameters_go_into_the_pilot_config_when_there_is_one(tmp_path):
    pilot = {"categories": ["a"], "data_dir": "data/pilot"}
    root = build_tree(tmp_path / "p", {"config/pilot.json": json.dumps(pilot, indent=2) + "\n", "a.py": 'D = "/home/alice/data"\n'})
    pathfix.fix(root)
    assert json.loads((root / "config/pilot.json").read_text()) == pilot | {"paths": {"DATA_ROOT": "${DATA_ROOT}"}}
    assert not (root / "config/paths.json").exists()


def test_fstrings_and_partial_strings_and_comments(tmp_path):
    root = build_tree(
        tmp_path / "p",
        {
            "a.py": (
                "import sys\n"
                'SPLIT = f"/home/alice/data/{sys.argv[1]}.csv"\n'
                'FLAG = "--out=/home/alice/runs/1 --x {y}"\n'
                "# was /home/alice/data before\n"
                "def f():\n"
                '    """Reads /home/alice/data/x."""\n'
            )
        },
    )
    pathfix.fix(root)
    assert (root / "a.py").read_text() == (
        PACKAGE_IMPORT + "import sys\n"
        "SPLIT = f\"{param_path('DATA_ROOT', '/')}{sys.argv[1]}.csv\"\n"
        "FLAG = f\"--out={param_path('RUNS_ROOT', '1')} --x {{y}}\"\n"
        "# was ${DATA_ROOT} before\n"
        "def f():\n"
        '    """Reads ${DATA_ROOT}/x."""\n'
    )


def test_a_rewrite_that_would_break_yaml_is_refused(tmp_path):
    # A flow mapping cannot hold "${...}" unquoted: the rewrite would not parse.
    original = "paths: {data: /home/alice/data}\nplain: /home/alice/data\n"
    root = build_tree(tmp_path / "p", {"config.yaml": original})
    result = pathfix.fix(root)
    [change] = result.changes
    assert change.status == "refused"
    assert change.reason.startswith("the rewrite would not parse (")
    assert (root / "config.yaml").read_text() == original
    yaml.safe_load(original)  # the original was valid: the refusal protected it


def test_an_invalid_toml_rewrite_is_refused_and_valid_toml_is_rewritten(tmp_path):
    root = build_tree(tmp_path / "p", {"good.toml": 'data = "/home/alice/data/x"\n', "bad.toml": "data = /home/alice/data\n"})
    result = pathfix.fix(root)
    status = {c.file: c.status for c in result.changes}
    assert status == {"bad.toml": "refused", "good.toml": "fixed"}
    assert (root / "good.toml").read_text() == 'data = "${DATA_ROOT}/x"\n'


def test_read_only_file_is_refused_under_fix(tmp_path):
    root = build_tree(tmp_path / "p", {"ro.py": 'P = "/home/alice/data"\n', "rw.py": 'Q = "/home/alice/data"\n'})
    os.chmod(root / "ro.py", stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
    completed = run_cli("paths", str(root), "--fix", "--json")
    assert completed.returncode == 1  # the read-only file keeps its finding
    report = json.loads(completed.stdout)
    refused = [c for c in report["fix"]["changes"] if c["status"] == "refused"]
    assert refused == [
        {"file": "ro.py", "status": "refused", "fixed": 0, "manual": [], "reason": "read-only file (no write permission bit): not modified"}
    ]
    assert (root / "ro.py").read_text() == 'P = "/home/alice/data"\n'
    assert [f["file"] for f in report["findings"]] == ["ro.py"]
    assert "read-only file" in completed.stderr


def test_a_fixed_project_runs_from_another_folder_under_another_home(tmp_path):
    data = build_tree(tmp_path / "elsewhere/datasets", {"train.csv": "42\n"})
    project = build_tree(
        tmp_path / "laptop/alice/proj",
        {
            "data/labels.txt": "invoice\n",
            "src/app/__init__.py": "",
            "src/app/main.py": (
                '"""Reads one machine-specific and one project file."""\n'
                'DATA = "/home/alice/datasets/train.csv"\n'
                'LABELS = "/home/alice/proj/data/labels.txt"\n'
                "print(open(DATA).read().strip(), open(LABELS).read().strip())\n"
            ),
        },
    )
    assert run_cli("paths", str(project), "--fix").returncode == 0
    # Move the folder to another machine: another place, another HOME, another cwd.
    moved = tmp_path / "rented/box/project"
    shutil.copytree(project, moved)
    shutil.rmtree(project)
    other_home = tmp_path / "home/bob"
    other_home.mkdir(parents=True)
    cwd = tmp_path / "somewhere"
    cwd.mkdir()
    env = {"PATH": os.environ["PATH"], "HOME": str(other_home), "PYTHONPATH": str(moved / "src")}

    def run(extra_env):
        return subprocess.run([sys.executable, "-m", "app.main"], cwd=cwd, env=env | extra_env, capture_output=True, text=True, check=False)

    # The environment variable overrides the original value kept in .env.local.
    completed = run({"DATASETS_ROOT": str(data)})
    assert (completed.returncode, completed.stdout) == (0, "42 invoice\n"), completed.stderr
    # Without it, .env.local is read: on this machine it is rewritten for the new place.
    (moved / ".env.local").write_text(f"DATASETS_ROOT={data}\n")
    completed = run({})
    assert (completed.returncode, completed.stdout) == (0, "42 invoice\n"), completed.stderr
    # Without either, the error names the parameter and the file to set.
    (moved / ".env.local").unlink()
    completed = run({})
    assert completed.returncode == 1
    assert "path parameter DATASETS_ROOT is not set" in completed.stderr


def test_a_fixed_script_runs_as_a_script_too(tmp_path):
    data = build_tree(tmp_path / "data", {"x.txt": "ok\n"})
    project = build_tree(tmp_path / "proj", {"tool.py": 'print(open("/root/notes/x.txt").read().strip())\n'})
    pathfix.fix(project)
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "NOTES_ROOT": str(data)}
    completed = subprocess.run(
        [sys.executable, str(project / "tool.py")], cwd=tmp_path, env=env, capture_output=True, text=True, check=False
    )
    assert (completed.returncode, completed.stdout) == (0, "ok\n"), completed.stderr
