"""The rule of `bundler paths`: absolute and not known to be portable, whatever the prefix.

Fixtures of our own, one per class the first-contact rounds brought (cluster homes under
unlisted prefixes, glued flags, doubled Windows separators, homes built from a user
lookup, remote folders kept in variables), and the rewrites that would change meaning
(a ``~`` nothing expands, a remote folder), which --fix must leave to a person. A file
written for a newer Python than the one running bundler, and Hydra configs with or without
OmegaConf installed next to bundler, are fixed all the same.
"""

from __future__ import annotations

import ast
import sys

import pytest
import yaml

from bundler.portability import fix as pathfix
from bundler.portability import scan as paths
from bundler.portability.equivalence import python_problem
from tests.paths_support import build_tree


def _found(root, name):
    return [(f.line, f.shape, f.category) for f in paths.scan(root).findings if f.file == name]


CASES = {
    "any absolute folder of one machine, whatever its prefix": (
        "cfg.py",
        "A = '/home/19/ab1234/data'\n"
        "B = '/h/ab1234/ckpt/model.pt'\n"
        "C = '/scratch/vision/ab1234/imagenet'\n"
        "D = '/data/ab1234/coco/'\n"
        "E = '/usr/nas02/lab/ab1234/runs'\n"
        "F = {'CIFAR': '/data/'}\n",
        [(1, "absolute", "code"), (2, "absolute", "code"), (3, "absolute", "code"), (4, "absolute", "code")]
        + [(5, "absolute", "code"), (6, "absolute", "code")],
    ),
    "portable absolute paths": (
        "sys.py",
        "#!/usr/bin/env python\n"
        "A = '/usr/local/cuda/lib64'\n"
        "B = '/opt/conda/bin/python'\n"
        "C = open('/dev/null', 'w')\n"
        "D = '/etc/hosts'\n"
        "E = '/proc/self/status'\n"
        "F = '/tmp/cache.lock'\n"
        "G = '/opt/bundle/project'\n",
        [],
    ),
    "not paths: tails, operators, string patterns, routes": (
        "tails.py",
        "a = root + '/results/x'\n"
        "b = f'{root}/pre/processed'\n"
        "c = (x - y)/len(z)/w\n"
        "d = path.split('/utils/')[0]\n"
        "e = name.startswith('/home')\n"
        "@app.route('/api/v1/predict')\n"
        "def predict(): ...\n"
        "url = 'https://example.org/data/x'\n",
        [],
    ),
    "paths glued to flags": (
        "build.sh",
        "gcc -I/home/ab/include -L/mnt/lab/lib x.c\npython train.py --data=/home/ab/data --out=/mnt/disk2/runs\n",
        [(1, "home", "code"), (1, "absolute", "code"), (2, "home", "code"), (2, "absolute", "code")],
    ),
    "doubled Windows separators": (
        "win.py",
        "A = 'C://Users//ab//data//x.csv'\nB = 'D://datasets//coco'\n",
        [(1, "windows-user", "code"), (2, "windows-drive", "code")],
    ),
    "homes built from a user lookup": (
        "user.py",
        "import getpass, os\n"
        "A = f'/home/{USER}/data'\n"
        "B = '/home/' + getpass.getuser()\n"
        "C = os.path.join('/home', user, 'x')\n"
        "D = os.path.join('/scratch', project, 'data')\n",
        [(2, "home", "code"), (3, "home-built", "code"), (4, "home-built", "code"), (5, "absolute-built", "code")],
    ),
    "a remote folder kept in a variable": (
        "sync.sh",
        'REMOTE_DIR="/home/ab/hpc/runs"\n'
        'LOCAL_DIR="/home/ab/runs"\n'
        "scp out.tar ab@login.cluster.org:$REMOTE_DIR\n"
        "cp out.tar $LOCAL_DIR/\n"
        "rsync -a results/ cluster:/scratch/ab/results/\n",
        [(1, "home", "remote"), (2, "home", "code"), (5, "remote", "remote")],
    ),
    "the image's own layout and repository-rooted patterns": (
        "Dockerfile",
        "FROM python:3.11\nWORKDIR /workspace/app\nCOPY . /workspace/app\n",
        [],
    ),
    "Hydra config groups and HTML attributes are not folders": (
        "conf/search.yaml",
        "defaults:\n  - override /hydra/sweeper: optuna\n  - /model/net@net: small\ndata: /datasets01/coco\n",
        [(4, "absolute", "config")],
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_rule(tmp_path, case):
    name, text, expected = CASES[case]
    root = build_tree(tmp_path / "project", {name: text})
    assert _found(root, name) == expected


def test_gitignore_patterns_are_the_repositorys_own(tmp_path):
    root = build_tree(tmp_path / "project", {".gitignore": "/build\n/data/raw/\n", "a.py": "X = '/data/raw/x'\n"})
    assert [(f.file, f.line) for f in paths.scan(root).failing] == [("a.py", 1)]


# --- rewrites that would change meaning ------------------------------------------------------


def test_a_tilde_nothing_expands_is_left_to_a_person(tmp_path):
    source = (
        "import os\n"
        'os.makedirs("~/Data/cifar10", exist_ok=True)\n'  # makes a folder named ~ here
        'CKPT = os.path.expanduser("~/ckpt")\n'  # the home
        'DATA = "/home/ab/data/train.csv"\n'
    )
    root = build_tree(tmp_path / "project", {"train.py": source})
    scanned = paths.scan(root)
    tilde = next(f for f in scanned.failing if f.line == 2)
    assert tilde.note and "expands" in tilde.note
    result = pathfix.fix(root, scan_result=scanned)
    change = next(c for c in result.changes if c.file == "train.py")
    assert change.status == "fixed" and [m["line"] for m in change.manual] == [2]
    text = (root / "train.py").read_text()
    assert 'os.makedirs("~/Data/cifar10", exist_ok=True)' in text
    assert 'param_path("CKPT_ROOT")' in text and 'param_path("DATA_ROOT", "train.csv")' in text


def test_the_proof_refuses_a_tilde_made_into_the_home():
    original = 'import os\nos.makedirs("~/Data")\n'
    new = 'import os\nos.makedirs(param_path("DATA_ROOT"))\n'
    start = original.index('"~/Data"')
    edits = [(start, start + len('"~/Data"'), 'param_path("DATA_ROOT")')]
    assert "could not be proven" in python_problem(original, new, {"DATA_ROOT": "~/Data"}, [], edits)
    expanded = 'import os\nos.makedirs(os.path.expanduser("~/Data"))\n'
    start = expanded.index("os.path.expanduser")
    edits = [(start, start + len('os.path.expanduser("~/Data")'), 'param_path("DATA_ROOT")')]
    assert python_problem(expanded, new, {"DATA_ROOT": "~/Data"}, [], edits) is None


def test_a_remote_folder_is_never_made_local(tmp_path):
    script = '#!/bin/bash\nREMOTE_OUT="/home/ab/project/outputs"\nscp -r ab@hpc.example.org:$REMOTE_OUT ./\n'
    python = 'import os\nremote_dir = "/home/ab/project/outputs"\nos.system(f"scp -r {host}:{remote_dir} .")\n'
    root = build_tree(tmp_path / "project", {"get.sh": script, "get.py": python, "outputs/.keep": ""})
    assert paths.scan(root).failing == []
    pathfix.fix(root)
    assert (root / "get.sh").read_text() == script and (root / "get.py").read_text() == python


# --- Python newer than the one running bundler, Python 2 -------------------------------------

NEWER = (
    "type Vector = list[float]\n"
    'cfg = {"a": 1}\n'
    'print(f"{cfg["a"]} done")\n'
    'DATA = "/home/ab/datasets/train.csv"\n'
    "def first[T](xs: list[T]) -> T:\n"
    "    return xs[0]\n"
)


def test_a_file_in_newer_syntax_is_fixed_on_any_python(tmp_path):
    root = build_tree(tmp_path / "project", {"new.py": NEWER})
    result = pathfix.fix(root)
    assert [(c.file, c.status) for c in result.changes] == [("new.py", "fixed")]
    text = (root / "new.py").read_text()
    assert 'DATA = param_path("DATASETS_ROOT", "train.csv")' in text
    assert text.splitlines()[-6:] == [*NEWER.splitlines()[:3], 'DATA = param_path("DATASETS_ROOT", "train.csv")', *NEWER.splitlines()[4:]]
    if sys.version_info >= (3, 12):
        ast.parse(text)  # where this Python reads it, the whole file parses after the rewrite


def test_python_2_is_still_refused(tmp_path):
    root = build_tree(
        tmp_path / "project",
        {"old.py": 'print "loading"\nDATA = "/home/ab/x.csv"\n', "tabs.py": 'if 1:\n        A = "/home/ab/a"\n\tB = 2\n'},
    )
    result = pathfix.fix(root)
    assert {c.file: c.status for c in result.changes} == {"old.py": "refused", "tabs.py": "refused"}
    assert all("did not parse before the rewrite" in c.reason for c in result.changes)


# --- OmegaConf: one behaviour whether or not it is installed ----------------------------------

HYDRA = {
    "train.py": '@hydra.main(config_path="conf", config_name="train")\ndef main(cfg): ...\n',
    "conf/train.yaml": "data_dir: /home/ab/datasets/coco\nlog_dir: ${hydra:runtime.cwd}/logs\nckpt: /scratch/lab/ab/ckpt/last.pt\n",
}


def _fixed_config(root):
    result = pathfix.fix(root)
    change = next(c for c in result.changes if c.file == "conf/train.yaml")
    return change.status, (root / "conf/train.yaml").read_text(), result.parameters


def test_hydra_configs_are_fixed_the_same_with_or_without_omegaconf(tmp_path, monkeypatch):
    with_it = _fixed_config(build_tree(tmp_path / "a", HYDRA))
    monkeypatch.setitem(sys.modules, "omegaconf", None)  # `import omegaconf` now fails, as where it is not installed
    without = _fixed_config(build_tree(tmp_path / "b", HYDRA))
    assert with_it == without and with_it[0] == "fixed"
    monkeypatch.delitem(sys.modules, "omegaconf")
    from omegaconf import OmegaConf

    status, text, values = with_it
    for name, value in values.items():
        monkeypatch.setenv(name, value)
    config = OmegaConf.create(yaml.safe_load(text))
    assert "${oc.env:" in text and config.ckpt == "/scratch/lab/ab/ckpt/last.pt"
    assert config.data_dir == "/home/ab/datasets/coco" and text.splitlines()[1] == "log_dir: ${hydra:runtime.cwd}/logs"


def test_a_quoted_tilde_in_a_script_is_no_home(tmp_path):
    script = '#!/bin/bash\nmkdir -p "~/runs/out"\ncp model.pt ~/models/\n'
    root = build_tree(tmp_path / "project", {"run.sh": script})
    scanned = paths.scan(root)
    notes = {f.line: f.note for f in scanned.failing}
    assert set(notes) == {2, 3} and "quoted" in notes[2] and notes[3] == ""
    result = pathfix.fix(root, scan_result=scanned)
    change = result.changes[0]
    assert change.status == "fixed" and [m["line"] for m in change.manual] == [2]
    text = (root / "run.sh").read_text()
    assert 'mkdir -p "~/runs/out"' in text and 'cp model.pt "${MODELS_ROOT}"/' in text
