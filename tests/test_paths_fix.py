"""`bundler paths --fix`: exact rewrites, nothing lost, idempotent, and the fixed code still runs."""

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

from bundler import fsutil
from bundler.portability import fix as pathfix
from bundler.portability.classify import read_env_local
from bundler.portability.python_rewrite import NOTEBOOK_IMPORT, PACKAGE_IMPORT
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
    assert completed.returncode == 1, completed.stderr  # the plain configs stay, reported
    assert (
        (laptop_repo / "src/app/train.py").read_text()
        == (
            '"""Train the classifier."""\n' + PACKAGE_IMPORT + "import os\n"
            "from pathlib import Path\n"
            "\n"
            'DATA = param_path("DATASETS_ROOT_2", "train.csv")\n'
            'CKPT = param_path("CHECKPOINTS_ROOT")\n'
            'CACHE = Path.home() / ".cache"\n'  # a portable tool folder: left alone
            'MODEL = param_path("MODELS_ROOT", "m.pt")\n'
            'URL = "https://example.com/home/alice/data.csv"\n'
            'HOMEWORK = param_path("HOMEWORK_ROOT", "notes.txt")\n'  # absolute, on one machine
            'SYSTEM = "/usr/share/dict/words"\n'
            'OUT = param_path("EXPERIMENT_ROOT", "out")  # results go here\n'
            'SCRATCH = "/tmp/scratch"\n'
            'WSL = param_path("CORPUS_ROOT")\n'
            "MASK = ~0x0F / 2\n"
        )
    )
    assert (laptop_repo / "src/app/_bundle_paths.py").read_text() == helper_source(2)


def test_values_read_by_unseen_code_are_left_and_reported(laptop_repo):
    report = json.loads(run_cli("paths", str(laptop_repo), "--fix", "--json").stdout)
    changes = {c["file"]: c for c in report["fix"]["changes"]}
    for name in ("config/train.yaml", "config/settings.json"):
        assert (laptop_repo / name).read_text() == LAPTOP_REPO[name]
        assert changes[name]["status"] == "unchanged"
        assert all("placeholder would reach it unexpanded" in m["why"] for m in changes[name]["manual"])
    assert (laptop_repo / "requirements.txt").read_text() == "numpy~=1.26\n-e ${SRC_ROOT}/mylib\n"  # pip expands it
    assert (laptop_repo / "README.md").read_text() == LAPTOP_REPO["README.md"]  # documentation: never rewritten


def test_fix_rewrites_a_notebook_with_one_import(tmp_path):
    cell = {"cell_type": "code", "execution_count": 1, "metadata": {}, "outputs": []}
    notebook = {
        "cells": [
            {"cell_type": "markdown", "metadata": {}, "source": ["Data under /home/alice/data\n"]},
            {**cell, "source": ["%matplotlib inline\n", "import pandas as pd\n", "a = pd.read_csv('/home/alice/data/a.csv')"]},
            {
                **cell,
                "source": ["b = '/home/alice/data/b.csv'"],
                "outputs": [{"name": "stdout", "output_type": "stream", "text": ["read /home/alice/data/b.csv\n"]}],
            },
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    root = build_tree(tmp_path / "p", {"nb/explore.ipynb": json.dumps(notebook, indent=1) + "\n"})
    result = pathfix.fix(root)
    cells = json.loads((root / "nb/explore.ipynb").read_text())["cells"]
    assert cells[0]["source"] == ["Data under /home/alice/data\n"]  # markdown is documentation
    assert cells[1]["source"] == [
        NOTEBOOK_IMPORT,
        "%matplotlib inline\n",
        "import pandas as pd\n",
        'a = pd.read_csv(param_path("DATA_ROOT", "a.csv"))',
    ]
    assert cells[2]["source"] == ['b = param_path("DATA_ROOT", "b.csv")']  # no second import
    assert cells[2]["outputs"][0]["text"] == ["read /home/alice/data/b.csv\n"]  # an output is a record of the run: left as is
    assert [m["text"] for m in result.changes[0].manual] == ["/home/alice/data/b.csv"]
    assert (root / "nb/_bundle_paths.py").read_text() == helper_source(1)


def test_nothing_is_lost(laptop_repo):
    originals = {name: (laptop_repo / name).read_bytes() for name in LAPTOP_REPO}
    fix = json.loads(run_cli("paths", str(laptop_repo), "--fix", "--json").stdout)["fix"]
    assert (
        read_env_local(laptop_repo / ".env.local")
        == fix["parameters"]
        == {
            "CHECKPOINTS_ROOT": "~/checkpoints",
            "HOMEWORK_ROOT": "/homework",
            "CORPUS_ROOT": "/mnt/c/Users/bob/corpus",
            "DATASETS_ROOT_2": "/home/alice/datasets",
            "DATASETS_ROOT_3": "$HOME/datasets",
            "EXPERIMENT_ROOT": "/tmp/experiment",
            "MODELS_ROOT": "C:\\Users\\bob\\models",
            "RESULTS_ROOT": "~/results",
            "SRC_ROOT": "/home/alice/src",
        }
    )
    backups = laptop_repo / fix["backup_dir"]
    changed = sorted(c["file"] for c in fix["changes"] if c["status"] == "fixed")
    assert changed == ["notebooks/explore.ipynb", "requirements.txt", "scripts/run.sh", "src/app/train.py"]
    for name in changed:
        assert (backups / name).read_bytes() == originals[name]
    gitignore = (laptop_repo / ".gitignore").read_text().splitlines()
    assert ".env.local" in gitignore and ".bundler/backups/" in gitignore  # the stored template render stays versioned
    declared = json.loads((laptop_repo / "config/paths.json").read_text())["paths"]
    assert declared == {name: "${" + name + "}" for name in fix["parameters"]}


def test_second_fix_changes_nothing(laptop_repo):
    run_cli("paths", str(laptop_repo), "--fix")
    after_first = tree_digest(laptop_repo)
    completed = run_cli("paths", str(laptop_repo), "--fix", "--json")
    changes = json.loads(completed.stdout)["fix"]["changes"]
    assert [c["status"] for c in changes] == ["unchanged"] * 3
    assert "notebooks/explore.ipynb" in {c["file"] for c in changes}  # its output's path stays, reported
    assert tree_digest(laptop_repo) == after_first


def test_parameters_go_into_the_pilot_config_when_there_is_one(tmp_path):
    pilot = {"categories": ["a"], "data_dir": "data/pilot"}
    root = build_tree(tmp_path / "p", {"config/pilot.json": json.dumps(pilot, indent=2) + "\n", "a.py": 'D = "/home/alice/data"\n'})
    pathfix.fix(root)
    assert json.loads((root / "config/pilot.json").read_text()) == pilot | {"paths": {"DATA_ROOT": "${DATA_ROOT}"}}
    assert not (root / "config/paths.json").exists()


def test_fstrings_partial_strings_comments_and_docstrings(tmp_path):
    root = build_tree(
        tmp_path / "p",
        {
            "a.py": (
                '"""Reads /home/alice/data/x."""\n'
                "import os, sys\n"
                "from pathlib import Path\n"
                'SPLIT = f"/home/alice/data/{sys.argv[0]}.csv"\n'
                'FLAG = "--out=/home/alice/runs/1 --x {y}"\n'
                "HOMED = f'{os.environ[\"HOME\"]}/data/z'\n"
                "KEY = f'{Path.home()}/.ssh/key'\n"
                "# was /home/alice/data before\n"
            )
        },
    )
    result = pathfix.fix(root)
    assert [c.status for c in result.changes] == ["fixed"]
    assert (root / "a.py").read_text() == (
        '"""Reads /home/alice/data/x."""\n' + PACKAGE_IMPORT + "import os, sys\n"
        "from pathlib import Path\n"
        "SPLIT = f\"{param_path('DATA_ROOT', '/')}{sys.argv[0]}.csv\"\n"
        "FLAG = f\"--out={param_path('RUNS_ROOT', '1')} --x {{y}}\"\n"
        "HOMED = f'{param_path(\"HOME_ROOT\")}/data/z'\n"
        "KEY = f'{Path.home()}/.ssh/key'\n"
        "# was ${DATA_ROOT} before\n"
    )
    env = {**os.environ, "HOME": "/home/bob", "DATA_ROOT": "/srv/data", "RUNS_ROOT": "/srv/runs", "HOME_ROOT": "/srv"}
    probe = "import runpy; g = runpy.run_path('a.py'); print(g['SPLIT'], g['FLAG'], g['HOMED'], g['KEY'])"
    out = subprocess.run([sys.executable, "-c", probe], cwd=root, env=env, capture_output=True, text=True, check=True).stdout
    assert out.split() == ["/srv/data/a.py.csv", "--out=/srv/runs/1", "--x", "{y}", "/srv/data/z", "/home/bob/.ssh/key"]


def test_an_unprovable_rewrite_is_refused_and_nothing_is_left_behind(tmp_path):
    original = 'P = "D:\\data\\new"\n'  # \n is an escape here: not the folder it looks like
    root = build_tree(tmp_path / "p", {"a.py": original})
    result = pathfix.fix(root)
    [change] = result.changes
    assert change.status == "refused" and "could not be proven" in change.reason
    assert (root / "a.py").read_text() == original
    assert sorted(os.listdir(root)) == ["a.py"]  # no backups, no helper, no .env.local


def test_a_file_that_did_not_parse_before_is_said_so_with_its_own_line(tmp_path, monkeypatch):
    root = build_tree(
        tmp_path / "p", {"py2.py": 'print "x"\nP = "/home/alice/data"\n', "ok.py": '"""Doc."""\nQ = "/home/alice/data"\nR = 1\n'}
    )
    changes = {c.file: c for c in pathfix.fix(root, apply=False).changes}
    assert changes["py2.py"].reason == "did not parse before the rewrite (SyntaxError at line 1): not modified"
    real = pathfix.rewrite_python

    def broken(text, findings, **kwargs):  # a rewrite that breaks line 3 of the original
        result = real(text, findings, **kwargs)
        result.source = result.source.replace("R = 1", "R = (")
        return result

    monkeypatch.setattr(pathfix, "rewrite_python", broken)
    changes = {c.file: c for c in pathfix.fix(root, apply=False).changes}
    assert changes["ok.py"].reason.startswith("the rewrite would not parse (SyntaxError at line 3)")


def test_crlf_and_a_legacy_encoding_are_kept(tmp_path):
    root = build_tree(tmp_path / "p", {"w.py": b"# -*- coding: cp1252 -*-\r\n# caf\xe9\r\nP = '/home/alice/data/x'\r\nQ = 1\r\n"})
    pathfix.fix(root)
    data = (root / "w.py").read_bytes()
    assert data.count(b"\r\n") == data.count(b"\n")  # every line ends in CRLF, the inserted ones too
    assert b"# caf\xe9\r\n" in data and data.endswith(b'P = param_path("DATA_ROOT", "x")\r\nQ = 1\r\n')


def test_one_parameter_per_folder_across_files(tmp_path):
    root = build_tree(
        tmp_path / "p",
        {"a.py": 'A = "/home/alice/data/a"\n', "b/b.py": 'B = "/home/alice/data/"\n', "c.sh": "#!/bin/sh\nls /home/alice/data\n"},
    )
    result = pathfix.fix(root)
    assert result.parameters == {"DATA_ROOT": "/home/alice/data"}
    assert 'param_path("DATA_ROOT", "/")' in (root / "b/b.py").read_text()


def test_a_toml_value_and_key_are_never_rewritten(tmp_path):
    original = '["/home/alice/keys"]\ndata = "/home/alice/data/x"\n'
    root = build_tree(tmp_path / "p", {"cfg.toml": original})
    [change] = pathfix.fix(root).changes
    assert change.status == "unchanged" and len(change.manual) == 2
    assert (root / "cfg.toml").read_text() == original


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


def test_a_failed_write_puts_every_file_back(tmp_path, monkeypatch):
    root = build_tree(tmp_path / "p", {"a.py": 'A = "/home/alice/data/a"\n', "b.py": 'B = "/home/alice/data/b"\n'})
    before = tree_digest(root)
    real = fsutil.atomic_write_bytes
    calls = []

    def failing(path, data):
        calls.append(path)
        if len(calls) == 2:
            raise OSError(28, "No space left on device", str(path))
        real(path, data)

    monkeypatch.setattr(fsutil, "atomic_write_bytes", failing)
    with pytest.raises(Exception) as raised:
        pathfix.fix(root)
    assert raised.value.exit_code == 10 and "No space left on device" in raised.value.message
    assert tree_digest(root) == before and sorted(os.listdir(root)) == ["a.py", "b.py"]


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
    run_cli("paths", str(project), "--fix")
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

    completed = run({"DATASETS_ROOT": str(data)})  # the environment wins over .env.local
    assert (completed.returncode, completed.stdout) == (0, "42 invoice\n"), completed.stderr
    (moved / ".env.local").write_text(f"DATASETS_ROOT={data}\n")
    completed = run({})
    assert (completed.returncode, completed.stdout) == (0, "42 invoice\n"), completed.stderr
    (moved / ".env.local").unlink()
    completed = run({})
    assert completed.returncode == 1 and "path parameter DATASETS_ROOT is not set" in completed.stderr
