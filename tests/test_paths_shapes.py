"""`bundler paths` on the shapes real research code has: one small fixture of our own per shape.

Each case is (file name, text, expected) where expected lists (line, kind, category) of
every finding; an empty list means "nothing may be found here".
"""

from __future__ import annotations

import json

import pytest

from bundler.portability import scan as paths
from tests.conftest import run_cli
from tests.paths_support import build_tree


def _found(root, name):
    return [(f.line, f.shape, f.category) for f in paths.scan(root).findings if f.file == name]


CASES = {
    # --- missed before ---------------------------------------------------------------
    "home lookups through the environment": (
        "load.py",
        "import os\n"
        "A = os.path.join(os.environ['HOME'], 'Datasets', 'flir')\n"
        'B = os.getenv("HOME") + "/runs"\n'
        "C = os.environ.get('HOME', '/srv')\n",
        [(2, "home-lookup", "code"), (3, "home-lookup", "code"), (4, "home-lookup", "code")],
    ),
    "home folders under a cluster prefix": (
        "paths.py",
        "A = '/burg/home/ab1234/repos/x/data.csv'\n"
        "B = '/gpfs/fs1/home/ab1234/scratch'\n"
        "C = '/private/home/ab1234/ckpt'\n"
        "D = '/data/users/ab1234/imagenet'\n"
        "E = 'exp/home/notes'\n",
        [(1, "home", "code"), (2, "home", "code"), (3, "home", "code"), (4, "home", "code")],
    ),
    "a path glued to a number, a coloured traceback": (
        "trace.cfg",
        "1/home/ab/x.py\nexp2/home/ab/x.py\n\x1b[0;32m/home/ab/lib/y.py\x1b[0m\n",
        [(1, "home", "config"), (3, "home", "config")],
    ),
    "a user folder held in a variable": (
        "job.sh",
        'EXE="/home/${SLURM_USER}/scratch/run"\nOUT=/home/$USER/out\n',
        [(1, "home", "code"), (2, "home", "code")],
    ),
    "windows drives, but not the system's folders": (
        "win.py",
        "A = 'D:/GitHub/other/dataset'\n"
        "B = r'C:\\Users\\bob\\models'\n"
        "C = 'C:/Program Files (x86)/Microsoft Visual Studio/bin'\n"
        "D = r'\\d:\\w+'\n",
        [(1, "windows-drive", "code"), (2, "windows-user", "code")],
    ),
    "windows' own folders on another drive are one owner's install": (
        "train.bat",
        "call D:\\ProgramData\\anaconda3\\Scripts\\activate.bat pytorch\r\n"
        "call C:\\ProgramData\\anaconda3\\Scripts\\activate.bat pytorch\r\n"
        '"E:\\Program Files\\Python39\\python.exe" train.py\r\n',
        [(1, "windows-drive", "code"), (3, "windows-drive", "code")],
    ),
    "colab drive": (
        "colab.py",
        "ROOT = '/content/drive/MyDrive/Research/data'\nTMP = '/content/sample_data'\n",
        [(1, "colab-drive", "code"), (2, "absolute", "code")],  # Colab's own folder: there only
    ),
    # --- remote, portable, documentation ---------------------------------------------------
    "commands run on another machine": (
        "sync.sh",
        "rsync -a out/ ab@cluster.example.org:~/runs/\n"
        'ssh cluster "mkdir -p ~/projects/x"\n'
        "scp model.pt cluster:/home/ab/models/\n"
        "cp out/x.pt ~/results/\n",
        [(1, "remote", "remote"), (2, "tilde", "remote"), (3, "remote", "remote"), (4, "tilde", "code")],
    ),
    "portable per-user tool folders": (
        "tools.py",
        "from pathlib import Path\n"
        "KEY = Path.home() / '.ssh' / 'id_rsa'\n"
        "CACHE = os.path.join(os.environ['HOME'], '.cache', 'x')\n"
        "KAGGLE = os.path.expanduser('~/.kaggle/kaggle.json')\n"
        "CFG = f'{Path.home()}/.config/tool.ini'\n"
        "DATA = os.path.expanduser('~/datasets/coco')\n",
        [(2, "home-lookup", "portable"), (3, "home-lookup", "portable"), (4, "home-lookup", "portable")]
        + [(5, "home-lookup", "portable"), (6, "home-lookup", "code")],
    ),
    "mathematics and docstring placeholders": (
        "model.py",
        '"""Train on COCO.\n\nUsage: python model.py --data /home/user/Datasets/coco\n"""\n'
        "# the error falls like ~1/n\n"
        "RATE = '~1/sqrt(n)'\n"
        "def f():\n"
        "    '''Reads ~/datasets/x.'''\n",
        [(3, "home", "docs"), (8, "tilde", "docs")],
    ),
    "markdown cells are documentation, images are not text": (
        "nb.ipynb",
        json.dumps(
            {
                "cells": [
                    {"cell_type": "markdown", "metadata": {}, "source": ["Data in /home/ab/data\n"]},
                    {
                        "cell_type": "code",
                        "metadata": {},
                        "execution_count": 1,
                        "source": ["x = open('/home/ab/data/x.csv')\n"],
                        "outputs": [{"output_type": "display_data", "metadata": {}, "data": {"image/png": "AAAA/home/abAAAA"}}],
                    },
                ],
                "metadata": {},
                "nbformat": 4,
                "nbformat_minor": 5,
            },
            indent=1,
        ),
        [(7, "home", "docs"), (15, "home", "notebook")],
    ),
    "a list of data files is configuration, a log is documentation": (
        "lists/train_list.txt",
        "/home/ab/imgs/1.png\n/home/ab/imgs/2.png\n",
        [(1, "home", "config"), (2, "home", "config")],
    ),
    "temporary folders count only where results are kept": (
        "temp.sh",
        "python train.py --outdir /tmp/run1\n"
        "python -c 'torch.save(m, \"/tmp/m.pt\")'\n"
        "load(cache_dir='/tmp/wiki_qa')\n"
        "mkdir -p /tmp/deepspeed\n"
        'wget "https://x.org/uc?export=download" --save-cookies /tmp/cookies.txt\n'
        "rm -rf /tmp/*\n",
        [(1, "temp-dir", "code"), (2, "temp-dir", "code")],
    ),
    "web addresses in scraped HTML are not folders": (
        "page.txt",
        '<a href="/users/alice/profile">x</a><img src="/-/media/site/home/hero.png">\n<p>kept in /home/alice/data</p>\n',
        [(2, "home", "docs")],
    ),
    "JSON escapes are not drives": ("cfg.json", '{"code": "with open(f) as f:\\n    pass"}\n', []),
    "an example file documents": ("env.example", "DATA=/home/user/data\n", [(1, "home", "docs")]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_shape(tmp_path, case):
    name, text, expected = CASES[case]
    root = build_tree(tmp_path / "p", {name: text})
    assert _found(root, name) == expected


def test_quoted_path_with_spaces_becomes_project_relative_when_its_tail_exists(tmp_path):
    root = build_tree(
        tmp_path / "course",
        {
            "Week 10/data.csv": "a,b\n",
            "load.py": "import pandas as pd\ndf = pd.read_csv('/Users/u/Desktop/Course/Week 10/data.csv')\n",
            "run.sh": "cp /Users/u/My\\ Files/x.txt out/\n",
            "cfg.yaml": "data: /Users/u/My Data/set  # the set\n",
        },
    )
    found = {f.file: f for f in paths.scan(root).findings}
    assert (found["load.py"].text, found["load.py"].replacement) == ("/Users/u/Desktop/Course/Week 10/data.csv", "Week 10/data.csv")
    assert found["run.sh"].text == "/Users/u/My\\ Files/x.txt"
    assert found["cfg.yaml"].text == "/Users/u/My Data/set"


def test_one_parameter_per_folder_whatever_its_spelling(tmp_path):
    root = build_tree(
        tmp_path / "p",
        {
            "a.sh": "ls $HOME/data/x\n",
            "b.sh": "ls ${HOME}/data/y\n",
            "c.sh": "ls ~/data/z\n",
            "d.py": "P = 'C:/Users/bob/m/a'\nQ = r'C:\\Users\\bob\\m\\b'\n",
        },
    )
    names = {(f.file, f.line): f.parameter for f in paths.scan(root).findings}
    assert names[("a.sh", 1)] == names[("b.sh", 1)] == names[("c.sh", 1)] == "DATA_ROOT"
    assert names[("d.py", 1)] == names[("d.py", 2)] == "M_ROOT"


def test_generated_and_tool_files_are_skipped_unless_asked_for(tmp_path):
    files = {
        "ext/nms.c": '/* Generated by Cython 0.29 */\n/* "/home/ab/lib/nms.pyx":12 */\n',
        ".idea/workspace.xml": '<option value="/home/ab/proj" />\n',
        ".vscode/settings.json": '{"python.defaultInterpreterPath": "/home/ab/venv/bin/python"}\n',
        "build/lib/x.py": "P = '/home/ab/x'\n",
        "pkg.egg-info/SOURCES.txt": "/home/ab/x\n",
        "real.py": "P = '/home/ab/real'\n",
    }
    root = build_tree(tmp_path / "p", files)
    editors = {".vscode/settings.json", ".idea/workspace.xml"}  # editor settings: the project's
    assert {f.file for f in paths.scan(root).findings} == {"real.py"} | editors
    assert {s.file for s in paths.scan(root).skipped} == {"ext/nms.c", "build/", "pkg.egg-info/"}
    assert {f.file for f in paths.scan(root, include_generated=True).findings} == set(files)
    completed = run_cli("paths", str(root), "--include-generated", "--json")
    assert {f["file"] for f in json.loads(completed.stdout)["findings"]} == set(files)


def test_json_keeps_information_apart_from_findings(tmp_path):
    root = build_tree(tmp_path / "p", {"sync.sh": "rsync -a out/ ab@cluster:~/runs/\ncp x ~/.cache/x\ncp y ~/data/y\n"})
    report = json.loads(run_cli("paths", str(root), "--json").stdout)
    assert [(f["line"], f["category"]) for f in report["findings"]] == [(3, "code")]
    assert [(f["line"], f["category"]) for f in report["information"]] == [(1, "remote"), (2, "portable")]
