"""What rounds P and Q met on first contact (issue 26): sed's colon delimiters, a search path's elements, drive
paths in a notebook's JSON of escaped source, a container command continued over lines, and pieces of a path
that only cut or test other strings.

Fixtures of our own, written as the rule reads (README of the hand labels), not as any repository spelled it.
"""

from __future__ import annotations

import json

from bundler.portability import scan as paths
from tests.paths_support import build_tree


def _failing(root):
    return [(f.file, f.line, f.text) for f in paths.scan(root).failing]


def test_seds_colon_delimiters_are_no_drive_and_a_drive_path_still_is(tmp_path):
    script = "sed -e 's:\\-.*$::' list | sort\nsed 's:\\.wav::g' x\ncp out D:\\data\\run\n"
    root = build_tree(tmp_path / "p", {"prep.sh": script})
    assert [(line, text) for _, line, text in _failing(root)] == [(3, "D:\\data\\run")]


def test_each_element_of_a_search_path_is_a_path_and_a_hosts_or_a_binds_colon_is_not(tmp_path):
    script = (
        "export PATH=$PWD/utils/:$TOOLS/bin:$PATH:/export/lab/python-3.4/bin\n"
        "export PYTHONPATH=$PYTHONPATH:/ourproject\n"
        "scp model.pt cluster:/data/ana/\n"
        "docker run -v data:/data img\n"
    )
    root = build_tree(tmp_path / "p", {"path.sh": script})
    assert [(line, text) for _, line, text in _failing(root)] == [(1, "/export/lab/python-3.4/bin"), (2, "/ourproject")]


def test_a_drive_path_in_a_notebooks_json_of_escaped_source_is_found(tmp_path):
    source = ["model_dir = 'C:\\\\Users\\\\ana\\\\Desktop\\\\runs\\\\'\n", "# old = 'c:\\\\Users\\\\ana\\\\x\\\\'\n"]
    notebook = {"cells": [{"cell_type": "code", "source": source, "outputs": [], "metadata": {}, "execution_count": 1}]}
    root = build_tree(tmp_path / "p", {"nb.ipynb": json.dumps(notebook | {"metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1)})
    assert [text.split("\\")[0] + "…" for _, _, text in _failing(root)] == ["C:…", "c:…"]


def test_a_container_command_continued_over_lines_keeps_its_container_paths(tmp_path):
    script = (
        "docker run -it --rm \\\n"
        "  --mount src=$(pwd),target=/root/code/zoo,type=bind img:latest \\\n"
        '  bash -c "cd /root/code/zoo/ && python train.py"\n'
        "cd /root/code/other\n"
    )
    root = build_tree(tmp_path / "p", {"run_docker.sh": script})
    assert [(line, text) for _, line, text in _failing(root)] == [(4, "/root/code/other")]


def test_a_value_that_only_cuts_or_tests_other_strings_is_a_piece_and_a_replacement_is_a_path(tmp_path):
    code = (
        "import os\n"
        "this_folder = '/user01/models'\n"
        "cwd = os.getcwd()\n"
        "root = cwd.replace(this_folder, '')\n"
        "inside = this_folder in cwd\n"
        "target = '/mnt/disk/labels'\n"
        "name = name.replace(prefix, target)\n"
    )
    root = build_tree(tmp_path / "p", {"run.py": code})
    assert [(line, text) for _, line, text in _failing(root)] == [(6, "/mnt/disk/labels")]
