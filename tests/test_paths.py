"""`bundler paths`: detection over a laptop repository with every shape and its decoys."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bundler.portability import scan as paths

NOTEBOOK = {
    "cells": [
        {
            "cell_type": "code",
            "execution_count": 1,
            "metadata": {},
            "outputs": [{"name": "stdout", "output_type": "stream", "text": ["saved to /home/alice/datasets/clean.csv\n"]}],
            "source": ["import pandas as pd\n", "df = pd.read_csv(\"/home/alice/datasets/train.csv\")\n"],
        }
    ],
    "metadata": {"papermill": {"input_path": "/home/alice/laptop_repo/notebooks/explore.ipynb"}},
    "nbformat": 4,
    "nbformat_minor": 5,
}

LAPTOP_REPO = {
    "src/app/__init__.py": "",
    "src/app/train.py": (
        '"""Train the classifier."""\n'                              # 1
        "import os\n"                                                 # 2
        "from pathlib import Path\n"                                  # 3
        "\n"                                                          # 4
        'DATA = "/home/alice/datasets/train.csv"\n'                  # 5 home
        'CKPT = os.path.expanduser("~/checkpoints")\n'               # 6 home-lookup
        'CACHE = Path.home() / ".cache"\n'                           # 7 home-lookup
        'MODEL = "C:\\\\Users\\\\bob\\\\models\\\\m.pt"\n'           # 8 windows-user
        'URL = "https://example.com/home/alice/data.csv"\n'          # 9 decoy: URL
        'HOMEWORK = "/homework/notes.txt"\n'                         # 10 decoy: /homework
        'SYSTEM = "/usr/share/dict/words"\n'                         # 11 decoy: system path
        'OUT = "/tmp/experiment/out"  # results go here\n'           # 12 temp-dir (an output)
        'SCRATCH = "/tmp/scratch"\n'                                 # 13 decoy: temp, not written to
        'WSL = "/mnt/c/Users/bob/corpus"\n'                          # 14 wsl-user
        "MASK = ~0x0F / 2\n"                                          # 15 decoy: operator
    ),
    "scripts/run.sh": "#!/bin/sh\npython -m app.train --data $HOME/datasets\ncp results.json ~/results/\n",
    "config/train.yaml": (
        "data_dir: /Users/alice/datasets\n"
        "output_dir: /home/alice/laptop_repo/runs/exp1\n"
        "docs_url: https://github.com/home/x\n"
    ),
    "config/settings.json": '{\n  "model_dir": "C:\\\\Users\\\\bob\\\\models",\n  "home_page": "http://example.org/Users/bob"\n}\n',
    "requirements.txt": "numpy~=1.26\n-e /home/alice/src/mylib\n",
    "Dockerfile": "FROM python:3.11-slim\nRUN rm -rf /tmp/*\n",
    "notebooks/explore.ipynb": json.dumps(NOTEBOOK, indent=1) + "\n",
    "README.md": "# Laptop repo\nData lives in /home/alice/datasets.\n",
    "runs/.gitkeep": "",
}

EXPECTED = {
    ("src/app/train.py", 5, "home"),
    ("src/app/train.py", 6, "home-lookup"),
    ("src/app/train.py", 7, "home-lookup"),
    ("src/app/train.py", 8, "windows-user"),
    ("src/app/train.py", 12, "temp-dir"),
    ("src/app/train.py", 14, "wsl-user"),
    ("scripts/run.sh", 2, "home-var"),
    ("scripts/run.sh", 3, "tilde"),
    ("config/train.yaml", 1, "home"),
    ("config/train.yaml", 2, "home"),
    ("config/settings.json", 2, "windows-user"),
    ("requirements.txt", 2, "home"),
    ("README.md", 2, "home"),
}


def build_tree(root: Path, files: dict[str, str | bytes]) -> Path:
    """Write ``files`` (relative path -> text or bytes) under ``root``; return ``root``."""
    for relative, content in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    return root


@pytest.fixture
def laptop_repo(tmp_path) -> Path:
    return build_tree(tmp_path / "laptop_repo", LAPTOP_REPO)


def _line_of(text: str, needle: str) -> int:
    return next(number for number, line in enumerate(text.splitlines(), 1) if needle in line)


def run_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bundler", *args], capture_output=True, text=True, cwd=cwd, check=False)


def test_laptop_repo_findings_are_exact(laptop_repo):
    result = paths.scan(laptop_repo)
    found = {(f.file, f.line, f.kind) for f in result.findings if f.category != "notebook"}
    assert found == EXPECTED


def test_notebook_source_output_and_metadata_each_have_their_kind_and_line(laptop_repo):
    text = (laptop_repo / "notebooks/explore.ipynb").read_text()
    result = paths.scan(laptop_repo)
    found = {(f.line, f.kind, f.shape) for f in result.findings if f.category == "notebook"}
    assert found == {
        (_line_of(text, "pd.read_csv"), "notebook-source", "home"),
        (_line_of(text, "saved to"), "notebook-output", "home"),
        (_line_of(text, "input_path"), "notebook-metadata", "home"),
    }


def test_replacements_name_parameters_and_project_relative_paths(laptop_repo):
    by_place = {(f.file, f.line): f for f in paths.scan(laptop_repo).findings}
    data = by_place[("src/app/train.py", 5)]
    assert (data.replacement, data.parameter, data.value) == ("${DATASETS_ROOT}/train.csv", "DATASETS_ROOT", "/home/alice/datasets")
    # written on another machine, but its tail names this project's runs/ folder
    inside = by_place[("config/train.yaml", 2)]
    assert (inside.replacement, inside.project_relative, inside.parameter) == ("runs/exp1", "runs/exp1", None)
    windows = by_place[("config/settings.json", 2)]
    assert (windows.text, windows.parameter, windows.value) == ("C:\\\\Users\\\\bob\\\\models", "MODELS_ROOT", "C:\\Users\\bob\\models")
    lookup = by_place[("src/app/train.py", 6)]
    assert (lookup.text, lookup.replacement, lookup.value) == ('os.path.expanduser("~/checkpoints")', "${CHECKPOINTS_ROOT}", "~/checkpoints")
    # the same value everywhere gets the same name
    assert by_place[("config/train.yaml", 1)].parameter == "DATASETS_ROOT_2"  # /Users/alice/datasets differs
    assert by_place[("scripts/run.sh", 2)].replacement == "${DATASETS_ROOT_3}"


def test_absolute_path_of_this_project_becomes_relative(tmp_path):
    root = build_tree(tmp_path / "proj", {"data/x.csv": "1\n"})
    (root / "load.py").write_text(f'X = "{root}/data/x.csv"\n')
    [finding] = paths.scan(root).findings
    assert (finding.kind, finding.replacement, finding.line, finding.column) == ("project-absolute", "data/x.csv", 1, 6)


def test_cli_json_lists_findings_and_exits_1(laptop_repo):
    completed = run_cli("paths", str(laptop_repo), "--json")
    assert completed.returncode == 1, completed.stderr
    report = json.loads(completed.stdout)
    assert report["ok"] is False
    first = report["findings"][0]
    assert set(first) >= {"file", "line", "column", "text", "kind", "category", "replacement"}
    assert {(f["file"], f["line"], f["kind"]) for f in report["findings"] if f["category"] != "notebook"} == EXPECTED
    assert report["skipped"] == []


def test_documentation_alone_never_fails(tmp_path):
    root = build_tree(tmp_path / "docs_only", {"README.md": "Clone into /home/alice/src.\n", "docs/setup.rst": "cd ~/src/\n"})
    completed = run_cli("paths", str(root), "--json")
    assert completed.returncode == 0, completed.stderr
    report = json.loads(completed.stdout)
    assert [(f["file"], f["category"]) for f in report["findings"]] == [("README.md", "docs"), ("docs/setup.rst", "docs")]


def test_default_project_is_the_current_folder(tmp_path):
    root = build_tree(tmp_path / "here", {"a.py": 'P = "/root/models"\n'})
    completed = run_cli("paths", "--json", cwd=root)
    assert completed.returncode == 1
    assert json.loads(completed.stdout)["findings"][0]["file"] == "a.py"


def test_a_missing_folder_is_a_usage_error(tmp_path):
    completed = run_cli("paths", str(tmp_path / "nowhere"))
    assert completed.returncode == 2
    assert "is not a folder" in completed.stderr


# --- bad inputs: listed as skipped, never crashed on --------------------------------------


def _skipped(root: Path) -> dict[str, str]:
    return {s.file: s.reason for s in paths.scan(root).skipped}


def test_invalid_utf8_is_skipped(tmp_path):
    root = build_tree(tmp_path / "p", {"latin1.py": b"P = '/home/alice/caf\xe9'\n", "ok.py": "X = 1\n"})
    assert _skipped(root) == {"latin1.py": "not UTF-8 text (byte 20)"}


def test_binary_file_is_skipped(tmp_path):
    root = build_tree(tmp_path / "p", {"model.pt": b"\x80\x02\x00/home/alice/x"})
    assert _skipped(root) == {"model.pt": "binary file"}


def test_huge_file_is_skipped_without_being_read(tmp_path, monkeypatch):
    root = tmp_path / "p"
    root.mkdir()
    with open(root / "huge.csv", "wb") as handle:  # sparse: 200 MB in no time
        handle.truncate(200 * 1024 * 1024)
    opened = []
    real_read = paths.read_bytes
    monkeypatch.setattr(paths, "read_bytes", lambda path: opened.append(path) or real_read(path))
    assert _skipped(root) == {"huge.csv": f"too large ({200 * 1024 * 1024} bytes > limit of {paths.MAX_FILE_BYTES})"}
    assert opened == []


def test_symlink_loop_and_symlink_leaving_the_project(tmp_path):
    outside = build_tree(tmp_path / "outside", {"secret.py": 'K = "/home/alice/.ssh/id_rsa"\n'})
    root = build_tree(tmp_path / "p", {"real.py": "X = 1\n"})
    os.symlink("loop_b", root / "loop_a")
    os.symlink("loop_a", root / "loop_b")
    os.symlink(".", root / "self")
    os.symlink(outside, root / "outside_link")
    os.symlink(outside / "secret.py", root / "secret_link.py")
    os.symlink("real.py", root / "alias.py")
    skipped = _skipped(root)
    assert skipped["loop_a"] == skipped["loop_b"] == "broken symlink or symlink loop"
    assert skipped["outside_link"].startswith("symlink leaving the project")
    assert skipped["secret_link.py"].startswith("symlink leaving the project")
    assert skipped["self"] == skipped["alias.py"] == "symlink inside the project (its target is scanned in place)"
    assert paths.scan(root).findings == []


def test_malformed_notebook_is_skipped(tmp_path):
    root = build_tree(tmp_path / "p", {"broken.ipynb": '{"cells": [{"source": "/home/alice/x"\n'})
    assert _skipped(root) == {"broken.ipynb": "malformed notebook (not valid JSON with a list of cells)"}


def test_unreadable_entries_are_skipped(tmp_path, monkeypatch):
    # Tests run as root, so chmod 000 would still be readable: a FIFO stands for a file
    # that cannot be read, and the read boundary is made to fail with EACCES.
    root = build_tree(tmp_path / "p", {"locked.py": 'P = "/home/alice/x"\n', "fine.py": "X = 1\n"})
    os.mkfifo(root / "pipe.py")
    real_open = open

    def guarded_open(path, *args, **kwargs):
        if str(path).endswith("locked.py"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(paths, "open", guarded_open, raising=False)
    assert _skipped(root) == {
        "locked.py": "cannot be read: Permission denied",
        "pipe.py": "not a regular file (FIFO, socket or device)",
    }


def test_read_bytes_reports_an_os_error_as_a_reason(tmp_path):
    assert paths.read_bytes(str(tmp_path)) == "cannot be read: it is a folder"
    assert paths.read_bytes(str(tmp_path / "missing")) == "cannot be read: No such file or directory"


def test_tool_folders_and_the_local_values_file_are_not_scanned(tmp_path):
    root = build_tree(
        tmp_path / "p",
        {".git/config": "[x]\n\tpath = /home/alice/x\n", ".env.local": "DATA_ROOT=/home/alice/data\n",
         ".bundler/backups/1/a.py": 'P = "/home/alice/x"\n', ".venv/lib/site.py": 'P = "/home/alice/x"\n'},
    )
    assert paths.scan(root).findings == []
