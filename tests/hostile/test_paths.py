"""Hostile inputs to `bundler paths`: what it cannot check or write is said, with its exit code, and nothing is left behind."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys

from tests.hostile.harness import Outcome, assert_refused, differences, run, snapshot
from tests.paths_support import build_tree


def test_latin1_text_is_checked_not_skipped(tmp_path):
    legacy = b"# -*- coding: latin-1 -*-\n# r\xe9sum\xe9\nDATA = '/home/alice/donn\xe9es/x.csv'\n"
    root = build_tree(tmp_path / "p", {"legacy.py": legacy, "nocookie.py": b"# r\xe9sum\xe9\nP = '/home/alice/x'\n"})
    outcome = run(["paths", str(root), "--json"], cwd=tmp_path, watched=(root,))
    assert_refused(outcome, 1, "2 machine-specific path(s) remain in 2 file(s)", json_mode=True)
    findings = {f["file"]: f for f in json.loads(outcome.stdout)["findings"]}
    assert (findings["legacy.py"]["line"], findings["legacy.py"]["text"]) == (3, "/home/alice/donn\u00e9es/x.csv")
    fixed = run(["paths", str(root), "--fix"], cwd=tmp_path)
    assert fixed.code == 1 and "nocookie.py: did not parse before the rewrite (SyntaxError" in fixed.stderr
    data = (root / "legacy.py").read_bytes()
    assert data.startswith(b"# -*- coding: latin-1 -*-\n") and data.endswith(
        b'# r\xe9sum\xe9\nDATA = param_path("DONN_ES_ROOT", "x.csv")\n'
    )
    assert (root / "nocookie.py").read_bytes() == b"# r\xe9sum\xe9\nP = '/home/alice/x'\n"


def test_an_oversize_text_file_is_not_checked(tmp_path):
    root = build_tree(tmp_path / "p", {"ok.py": "X = 1\n"})
    with open(root / "big.csv", "wb") as handle:
        handle.write(b"path\n/home/alice/x\n" * 1000)
        handle.truncate(11 * 1024 * 1024)
    outcome = run(["paths", str(root), "--json"], cwd=tmp_path, watched=(root,))
    assert_refused(outcome, 21, "could not be checked", "big.csv", json_mode=True)
    assert json.loads(outcome.stdout)["not_checked"][0]["reason"].startswith("too large")


def test_an_invalid_notebook_is_not_checked(tmp_path):
    root = build_tree(tmp_path / "p", {"nb.ipynb": '{"cells": [{"source": ["open(\'/home/alice/x\')"]\n', "ok.py": "X = 1\n"})
    outcome = run(["paths", str(root)], cwd=tmp_path, watched=(root,))
    assert_refused(outcome, 21, "nb.ipynb", "malformed notebook")
    assert "No machine-specific paths (" not in outcome.stderr


def test_a_symlink_out_of_the_project_is_not_checked(tmp_path):
    outside = build_tree(tmp_path / "outside", {"secrets.py": "K = '/home/alice/.ssh/id_rsa'\n"})
    root = build_tree(tmp_path / "p", {"ok.py": "X = 1\n"})
    os.symlink(outside, root / "vendor")
    outcome = run(["paths", str(root), "--json"], cwd=tmp_path, watched=(root, outside))
    assert_refused(outcome, 21, "vendor", "symlink leaving the project", json_mode=True)


def test_a_read_only_file_is_not_modified_under_fix(tmp_path):
    root = build_tree(tmp_path / "p", {"ro.py": "DATA = '/home/alice/data'\n"})
    os.chmod(root / "ro.py", stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
    outcome = run(["paths", str(root), "--fix"], cwd=tmp_path, watched=(root,))
    assert_refused(outcome, 1, "remain", "could not be rewritten safely")
    assert "read-only file (no write permission bit)" in outcome.stderr
    assert sorted(os.listdir(root)) == ["ro.py"]  # no backups, no helper, no .env.local


def test_an_unwritable_project_under_fix_leaves_nothing_behind(tmp_path):
    root = build_tree(tmp_path / "p", {"a.py": "DATA = '/home/alice/data/a'\n", "sub/b.py": "B = '/home/alice/data/b'\n"})
    for folder in (root / "sub", root):
        os.chmod(folder, 0o555)
    before = snapshot(root)
    # Root may write anywhere: the command runs without the capabilities that let it.
    command = [
        "setpriv",
        "--bounding-set=-dac_override,-dac_read_search,-fowner",
        sys.executable,
        "-m",
        "bundler",
        "paths",
        str(root),
        "--fix",
    ]
    try:
        completed = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False)
        outcome = Outcome(completed.returncode, completed.stdout, completed.stderr, differences(before, snapshot(root)))
    finally:
        for folder in (root, root / "sub"):
            os.chmod(folder, 0o755)
    assert_refused(outcome, 10, "put every file back", "Permission denied")
    assert sorted(os.listdir(root)) == ["a.py", "sub"]
