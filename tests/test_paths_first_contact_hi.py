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
    assert any("named as this project" in m["why"] for m in change.manual)
    backup = (root / result.backup_dir / "nb/train.ipynb").read_text()
    prefixes = [f.text[: f.prefix_length] for f in before.failing if f.project_relative is not None and f.prefix_length]
    values = read_env_local(root / ".env.local")
    assert _notebook_proof(backup, (root / "nb/train.ipynb").read_text(), values, prefixes) is None
    assert pathfix.fix(root).written == []  # once the root's own spelling is gone, the cell is still left as is


# --- 2. a command substitution inside a path is an interpolation, like $USER -----------------


def test_a_command_substitution_inside_a_path_does_not_hide_it(tmp_path):
    script = "#!/bin/bash\nexport HF_HOME=/scratch/$(whoami)/.cache/hf/\nOUT=/scratch/`whoami`/runs/\nD=/home/$(id -un)/data\n"
    root = build_tree(tmp_path / "p", {"run.sh": script})
    assert [(n, s, c) for _, n, s, c in _found(root)] == [(2, "absolute", "code"), (3, "absolute", "code"), (4, "home", "code")]


# --- 3. a variable's name is read as words: only a word saying URL or route drops a path ------


def test_a_name_drops_an_absolute_path_only_when_its_words_say_url_or_route(tmp_path):
    code = (
        "src = '/home/ab/data/x.csv'\n"
        "prototype_purity_file = '/gpfs/lab/ab/purity.npy'\n"
        "base_url = '/api/v1'\n"
        "apiRoute = '/items/list'\n"
        "@app.route('/users/list')\n"
    )
    page = '<img class="a" src="/users/ab.png">\n'
    root = build_tree(tmp_path / "p", {"a.py": code, "page.vue": page})
    assert [(f, n) for f, n, _, _ in _found(root)] == [("a.py", 1), ("a.py", 2)]


# --- 4. a drive path is read in the source text, whatever its escape decodes to -------------


def test_a_drive_path_whose_backslash_is_an_escape_is_still_a_path(tmp_path):
    code = 'config = {"output_dir": "E:\\a"}\nprint("Total:\\n")\nnote = "A:\\n"\nlog_dir = "A:\\n"\n'
    root = build_tree(tmp_path / "p", {"a.py": code})
    assert [(n, s) for _, n, s, _ in _found(root)] == [(1, "windows-drive"), (4, "windows-drive")]


# --- 5. a prefix comparison names the folder the code expects to run under -------------------


def test_a_prefix_comparison_with_an_absolute_path_is_a_finding(tmp_path):
    code = "if os.getcwd().startswith('/gpfs/lab5'):\n    pass\nparts = name.split('/utils/')\n"
    code += "if request.url.path.startswith('/api/v1'):\n    pass\n"
    root = build_tree(tmp_path / "p", {"a.py": code})
    assert [(n, s) for _, n, s, _ in _found(root)] == [(1, "absolute")]


# --- 6. a minified bundle is generated, known by its content ---------------------------------


def test_a_minified_bundle_is_generated_by_its_content(tmp_path):
    line = "var a=1;" * 60  # 480 characters on one line
    files = {
        "static/index-Cf9rC4Nx.js": f'{line}fetch("/dataset/list");\n',  # a bundler's hashed name, a long line
        "static/app.js": "x=1;" * 300 + 'go("/clusters/all")\n',  # a line no person writes
        "static/hand.js": f'// {line}\nconst DATA = "/home/ab/data";\n',  # written by hand: scanned
    }
    root = build_tree(tmp_path / "p", files)
    scanned = paths.scan(root)
    assert {f.file for f in scanned.findings} == {"static/hand.js"}
    assert {s.file for s in scanned.skipped} >= {"static/index-Cf9rC4Nx.js", "static/app.js"}
    assert {f.file for f in paths.scan(root, include_generated=True).findings} == set(files)


# --- 7. markup and regular expressions are text written with slashes ------------------------


def test_a_closing_tag_and_a_regex_literal_are_not_folders(tmp_path):
    data = json.dumps([{"input": "<root> <item>1</item> </root>"}, {"code": 'bio.replace(/England/g, "UK")'}], indent=1)
    files = {"data/demo.json": data + "\n", "a.py": "OUT = '/root/out'\nG = '/data/g'\n", "b.sh": "cd /data/s\n"}
    root = build_tree(tmp_path / "p", files)
    assert [(f, n) for f, n, _, _ in _found(root)] == [("a.py", 1), ("a.py", 2), ("b.sh", 1)]


# --- 8. IPython's shortened home in tracebacks ----------------------------------------------


def test_ipythons_shortened_home_is_found_and_a_home_that_was_root_is_the_systems(tmp_path):
    windows = "\u001b[1;32m~\\Desktop\\work\\proj\\model.py\u001b[0m in forward\n"
    system = "\u001b[0;32m~usr/local/lib/python3.6/dist-packages/torch/optim/adam.py\u001b[0m in step\n"
    cell = {"cell_type": "code", "execution_count": 1, "metadata": {}, "source": ["go()\n"]}
    cell["outputs"] = [{"output_type": "error", "ename": "E", "evalue": "", "traceback": [windows, system]}]
    notebook = json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1) + "\n"
    root = build_tree(tmp_path / "p", {"run.ipynb": notebook, "a.py": "P = '~ab/data/x'\n"})
    found = [(f.file, f.shape, f.text) for f in paths.scan(root).findings]
    assert found == [("a.py", "tilde", "~ab/data/x"), ("run.ipynb", "tilde", "~\\\\Desktop\\\\work\\\\proj\\\\model.py")]
