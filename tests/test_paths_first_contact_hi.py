"""What rounds H and I met on first contact (issue 26, mender A's classes): a notebook rewrite
proven without the project roots its other cells name, command substitutions inside a path,
variable names read as words, drive paths whose backslash is an escape, prefix comparisons,
minified bundles, markup and regex text in data files, IPython's shortened home, editor settings.

Fixtures of our own, written as the rule reads (README of the hand labels), not as any
repository spelled it.
"""

from __future__ import annotations

import json

from bench.bench_paths import _notebook_proof
from bundler.portability import fix as pathfix
from bundler.portability import scan as paths
from bundler.portability.classify import read_env_local
from tests.paths_support import build_tree

WIN_ROOT = "C:\\Users\\ab\\Desktop\\work\\proj"


def _found(root, name=None):
    return [(f.file, f.line, f.shape, f.category) for f in paths.scan(root).findings if name is None or f.file == name]


def _notebook(*sources):
    cells = [{"cell_type": "code", "execution_count": 1, "metadata": {}, "outputs": [], "source": list(s)} for s in sources]
    return json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1) + "\n"


# --- 1. a notebook cell is proven knowing every project root the notebook names -------------


def test_a_notebook_cell_under_the_projects_root_is_not_rewritten_to_a_parameter(tmp_path):
    first = [f"sound = r'{WIN_ROOT}\\sounds'\n"]  # the project's own folder: its tail is in the repository
    second = [f"data = r'{WIN_ROOT}\\ignored_data\\raw'\n"]  # under the project's root, not in the repository
    root = build_tree(tmp_path / "proj", {"nb/train.ipynb": _notebook(first, second), "sounds/a.txt": "x\n"})
    before = paths.scan(root)
    result = pathfix.fix(root, scan_result=before)
    written = json.loads((root / "nb/train.ipynb").read_text())["cells"]
    assert 'project_path("sounds")' in "".join(written[0]["source"])
    assert "".join(written[1]["source"]) == "".join(second)  # a parameter would not follow the project when it moves
    change = next(c for c in result.changes if c.file == "nb/train.ipynb")
    assert any("could not be proven" in m["why"] for m in change.manual)
    backup = (root / result.backup_dir / "nb/train.ipynb").read_text()
    prefixes = [f.text[: f.prefix_length] for f in before.failing if f.project_relative is not None and f.prefix_length]
    values = read_env_local(root / ".env.local")
    assert _notebook_proof(backup, (root / "nb/train.ipynb").read_text(), values, prefixes) is None
