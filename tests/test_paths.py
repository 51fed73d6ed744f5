"""`bundler paths`: detection over a laptop repository with every shape and its decoys."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from bundler.portability import scan as paths
from tests.conftest import run_cli
from tests.paths_support import EXPECTED, INFORMATION, LAPTOP_REPO, build_tree


@pytest.fixture
def laptop_repo(tmp_path) -> Path:
    return build_tree(tmp_path / "laptop_repo", LAPTOP_REPO)


def _line_of(text: str, needle: str) -> int:
    return next(number for number, line in enumerate(text.splitlines(), 1) if needle in line)


def test_laptop_repo_findings_are_exact(laptop_repo):
    result = paths.scan(laptop_repo)
    found = {(f.file, f.line, f.kind) for f in result.findings if f.category != "notebook" and f not in result.information}
    assert found == EXPECTED
    assert {(f.file, f.line, f.kind) for f in result.information} == INFORMATION


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
    assert (data.replacement, data.value) == ("${DATASETS_ROOT_2}/train.csv", "/home/alice/datasets")
    # written on another machine, but its tail names this project's runs/ folder
    inside = by_place[("config/train.yaml", 2)]
    assert (inside.replacement, inside.project_relative, inside.parameter) == ("runs/exp1", "runs/exp1", None)
    windows = by_place[("config/settings.json", 2)]
    assert (windows.text, windows.parameter, windows.value) == ("C:\\\\Users\\\\bob\\\\models", "MODELS_ROOT", "C:\\Users\\bob\\models")
    lookup = by_place[("src/app/train.py", 6)]
    assert (lookup.text, lookup.replacement, lookup.value) == (
        'os.path.expanduser("~/checkpoints")',
        "${CHECKPOINTS_ROOT}",
        "~/checkpoints",
    )
    # one name per folder, whatever its spelling; names handed out in walk order
    assert by_place[("config/train.yaml", 1)].parameter == "DATASETS_ROOT"  # /Users/alice/datasets, met first
    assert data.parameter == "DATASETS_ROOT_2"  # /home/alice/datasets is another folder
    assert by_place[("scripts/run.sh", 2)].replacement == "${DATASETS_ROOT_3}"  # $HOME/datasets


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
    assert {(f["file"], f["line"], f["kind"]) for f in report["information"]} == INFORMATION
    assert report["skipped"] == [] and report["not_checked"] == []


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


# --- what the scan cannot look at: listed as not checked, never reported clean -----------


def _not_checked(root: Path) -> dict[str, str]:
    return {s.file: s.reason for s in paths.scan(root).not_checked}


def _skipped(root: Path) -> dict[str, str]:
    return {s.file: s.reason for s in paths.scan(root).skipped}


def test_legacy_8bit_text_is_scanned_and_its_paths_found(tmp_path):
    root = build_tree(tmp_path / "p", {"latin1.py": b"# caf\xe9\nP = '/home/alice/caf\xe9/x'\n", "ok.py": "X = 1\n"})
    result = paths.scan(root)
    [finding] = result.findings
    assert (finding.file, finding.line, finding.text) == ("latin1.py", 2, "/home/alice/caf\u00e9/x")
    assert result.encodings == {"latin1.py": "cp1252"} and result.not_checked == []


def test_utf16_text_is_not_checked(tmp_path):
    root = build_tree(tmp_path / "p", {"notes.txt": "\ufeff/home/alice/x\n".encode("utf-16")})
    assert _not_checked(root) == {"notes.txt": "UTF-16 text: save it as UTF-8 to have it checked"}


def test_binary_and_data_files_are_skipped(tmp_path):
    root = build_tree(tmp_path / "p", {"model.bin2": b"\x80\x02\x00/home/alice/x", "weights.pkl": b"(S'/home/alice/x'\np0\n."})
    assert _skipped(root) == {"model.bin2": "binary file", "weights.pkl": "binary or data file"}
    assert paths.scan(root).findings == []


def test_huge_text_file_is_not_checked_without_being_read_whole(tmp_path):
    root = tmp_path / "p"
    root.mkdir()
    with open(root / "huge.csv", "wb") as handle:
        handle.write(b"path\n/home/alice/x\n" * 1000)
        handle.truncate(200 * 1024 * 1024)  # sparse: 200 MB in no time, text at its start
    reason = f"too large ({200 * 1024 * 1024} bytes > limit of {paths.MAX_FILE_BYTES}) and not text after line 2000 (a NUL byte)"
    assert _not_checked(root) == {"huge.csv": f"{reason}: check it by hand"}


def test_symlinks_loop_leave_or_stay(tmp_path):
    outside = build_tree(tmp_path / "outside", {"secret.py": 'K = "/home/alice/.ssh/id_rsa"\n'})
    root = build_tree(tmp_path / "p", {"real.py": "X = 1\n"})
    os.symlink("loop_b", root / "loop_a")
    os.symlink("loop_a", root / "loop_b")
    os.symlink(".", root / "self")
    os.symlink(outside, root / "outside_link")
    os.symlink(outside / "secret.py", root / "secret_link.py")
    os.symlink("real.py", root / "alias.py")
    skipped, unchecked = _skipped(root), _not_checked(root)
    assert skipped["loop_a"] == skipped["loop_b"] == "broken symlink or symlink loop"
    assert set(unchecked) == {"outside_link", "secret_link.py"}
    assert all(reason.startswith("symlink leaving the project") for reason in unchecked.values())
    assert skipped["self"] == skipped["alias.py"] == "symlink inside the project (its target is scanned in place)"
    assert paths.scan(root).findings == []


def test_a_symlink_to_a_user_folder_is_a_finding(tmp_path):
    root = build_tree(tmp_path / "p", {"a.py": "X = 1\n"})
    os.symlink("/home/alice/datasets/coco", root / "data")
    [finding] = paths.scan(root).findings
    assert (finding.file, finding.kind, finding.text, finding.category) == ("data", "symlink-target", "/home/alice/datasets/coco", "config")


def test_malformed_notebook_is_not_checked(tmp_path):
    root = build_tree(tmp_path / "p", {"broken.ipynb": '{"cells": [{"source": "/home/alice/x"\n'})
    assert _not_checked(root) == {"broken.ipynb": "malformed notebook (not valid JSON with a list of cells)"}


def test_unreadable_entries_are_not_checked(tmp_path, monkeypatch):
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
    assert _not_checked(root) == {"locked.py": "cannot be read: Permission denied"}
    assert _skipped(root) == {"pipe.py": "not a regular file (FIFO, socket or device)"}


def test_cli_exit_21_when_only_unchecked_files_remain(tmp_path):
    root = build_tree(tmp_path / "p", {"broken.ipynb": "{not json\n", "ok.py": "X = 1\n"})
    completed = run_cli("paths", str(root), "--json")
    assert completed.returncode == 21, completed.stderr
    report = json.loads(completed.stdout)
    assert report["ok"] is False and report["not_checked"][0]["file"] == "broken.ipynb"
    assert "No machine-specific paths (" not in completed.stderr


def test_tool_folders_and_the_local_values_file_are_not_scanned(tmp_path):
    root = build_tree(
        tmp_path / "p",
        {
            ".git/config": "[x]\n\tpath = /home/alice/x\n",
            ".env.local": "DATA_ROOT=/home/alice/data\n",
            ".bundler/backups/1/a.py": 'P = "/home/alice/x"\n',
            ".venv/lib/site.py": 'P = "/home/alice/x"\n',
        },
    )
    assert paths.scan(root).findings == []
