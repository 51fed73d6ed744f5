"""Classes that held-out rounds C and D brought to `bundler paths` (issue 26), one fixture of our own each.

Round C: a user's own dot file in the home (only the shell's and tools' dot folders are the
same on every machine), images and videos inlined as base64 in a notebook's output, a single
folder such as ``/data`` given to a name that holds a folder, a temporary folder whose own
name says it keeps results, software installed under ``/opt``. Round D: a tail glued to an
interpolation (``{var}'/x'``), the system's ``/var``, a phase's output folder in ``/tmp``
(``train_dir``), a magic's folder at the end of a notebook line, a container's own paths on a
``docker exec`` line. Round E: scripts that run in the project's own container, whose
paths sit under a folder the project binds, mounts or builds into it.
"""

from __future__ import annotations

import base64
import json
import random

import pytest

from bundler.portability import fix as pathfix
from bundler.portability import scan as paths
from tests.paths_support import build_tree


def _found(root, name):
    return [(f.line, f.shape, f.category) for f in paths.scan(root).findings if f.file == name]


def _video_notebook() -> str:
    """A notebook whose output inlines an mp4 as a data: URI, wrapped at 76 characters as MIME does."""
    payload = base64.b64encode(random.Random(7).randbytes(3000)).decode()
    lines = ['<video controls src="data:video/mp4;base64,'] + [payload[i : i + 76] + "\n" for i in range(0, len(payload), 76)]
    output = {"output_type": "display_data", "metadata": {}, "data": {"text/html": lines + ['">\n', "</video>"]}}
    cell = {"cell_type": "code", "metadata": {}, "execution_count": 1, "source": ["show(video)"], "outputs": [output]}
    return json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 2}, indent=1)


CASES = {
    "a user's own dot file is machine-specific, a tool's is not": (
        "job.sh",
        "source ~/.cp2kenv\nsource ~/.torchenv_gpu\nsource ~/.bashrc\nls ~/.cache/torch\n",
        [(1, "tilde", "code"), (2, "tilde", "code"), (3, "tilde", "portable"), (4, "tilde", "portable")],
    ),
    "one folder given to a name that holds a folder": (
        "config.py",
        'parser.add_argument("--data_path", default="/data", help="where the data is")\n'
        'DATA_DIR = "/scratch"\n'
        'route = "/login"\n'
        'p = "/data"\n'
        "x = name.split('/utils')\n",
        [(1, "absolute", "code"), (2, "absolute", "code")],
    ),
    "one folder in a config, but the container's side of a mount": (
        "pod.yaml",
        "root: /data\nvolumeMounts:\n  - mountPath: /mydata\n    name: data\nlog_dir: /workspace # on the node\n",
        [(1, "absolute", "config"), (5, "absolute", "config")],
    ),
    "a temporary folder named for results": (
        "train.py",
        "checkpoint = ModelCheckpoint(\n    filepath='/tmp/checkpoints',\n)\nlock = '/tmp/cache.lock'\nscratch = '/tmp/x1'\n",
        [(2, "temp-dir", "code")],
    ),
    "software installed under /opt is the system's": (
        "spec.py",
        'container = {"command": ["python", "/opt/pytorch-mnist/mnist.py"], "env": "/opt/ml/input/data"}\n',
        [],
    ),
}


ROUND_D = {
    "a tail glued to an interpolation is no path of its own": (
        "copy.sh",
        'cp -R ./runs/ ${OUT}"/tensorboard/"\ncp -R ./runs/ "/mnt/ab/tensorboard/"\n',
        [(2, "absolute", "code")],
    ),
    "the system's /var, and outputs kept in /var/tmp": (
        "setup.sh",
        "apt-key add /var/cuda-repo-ubuntu2004-11-3-local/7fa2af80.pub\nOUT=/var/tmp/outputs/run1\n",
        [(2, "temp-dir", "code")],
    ),
    "a phase's folder in /tmp keeps its outputs, downloaded data does not": (
        "flags.py",
        "DEFINE_string('train_dir', '/tmp/cifar10_train', 'where to write')\n"
        "DEFINE_string('eval_dir', '/tmp/cifar10_eval', 'event logs')\n"
        "DEFINE_string('data_dir', '/tmp/cifar10_data', 'downloaded data')\n",
        [(1, "temp-dir", "code"), (2, "temp-dir", "code")],
    ),
    "a container's own paths on a docker exec or run line, not a bind's host side": (
        "run.sh",
        "docker exec -it $NAME /bin/bash /scripts/setup.sh\n"
        "docker run -v /home/ab/data:/data img python /app/train.py\n"
        "docker run --env-file /mnt/ab/secrets.env img\n",
        [(2, "home", "code"), (3, "absolute", "code")],
    ),
}


def _magic_notebook() -> str:
    cell = {"cell_type": "code", "metadata": {}, "execution_count": 1, "outputs": [], "source": ["%cd /content/\n", "x = 1"]}
    return json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 2}, indent=1)


def test_a_magics_folder_at_a_notebook_lines_end(tmp_path):
    root = build_tree(tmp_path / "project", {"colab.ipynb": _magic_notebook()})
    found = [(f.file, f.text) for f in paths.scan(root).failing]
    assert found == [("colab.ipynb", "/content/")]


@pytest.mark.parametrize("case", sorted(CASES) + sorted(ROUND_D))
def test_held_out_classes(tmp_path, case):
    name, text, expected = CASES.get(case) or ROUND_D[case]
    root = build_tree(tmp_path / "project", {name: text})
    assert _found(root, name) == expected


def test_base64_video_in_a_notebook_output_is_no_folder(tmp_path):
    notebook = _video_notebook()
    assert sum(line.lstrip().startswith('"/') for line in notebook.splitlines()) > 0  # the payload has lines that start a "path"
    root = build_tree(tmp_path / "project", {"viz.ipynb": notebook, "keep.py": "OUT = '/home/ab/runs/v1'\n"})
    assert [(f.file, f.line) for f in paths.scan(root).failing] == [("keep.py", 1)]


def test_a_long_path_is_not_taken_for_base64(tmp_path):
    long_path = "/home/ab/experiments/imagenet/resnet/lr/warmup/cosine/seed/one/two/three/checkpoints/best"
    hashed = "/data/ab/cache/0123456789abcdef0123456789abcdef01234567/model"
    root = build_tree(tmp_path / "project", {"p.py": f"A = '{long_path}'\nB = '{hashed}'\n"})
    assert [f.line for f in paths.scan(root).failing] == [1, 2]


def test_paths_under_the_projects_own_container_layout_are_the_containers(tmp_path):
    files = {
        "Dockerfile": "FROM python:3.11\nWORKDIR /workspace\nCOPY . /workspace\n",
        "docker-run.sh": "docker run -v /mnt/nas/waymo:/data/waymo -v /mnt/nas/ckpt:/data/checkpoints img\n",
        "train.sh": "python train.py --data /data/waymo/train --out /data/checkpoints --config /workspace/configs/a.yaml\n",
        "host.py": "DATA = '/data/other/set'\nRAW = '/mnt/nas/waymo/raw'\n",
        "pod.yaml": "volumeMounts:\n  - mountPath: /models\n",
        "serve.py": "MODEL = '/models/best.pt'\n",
    }
    root = build_tree(tmp_path / "project", files)
    failing = sorted((f.file, f.line, f.text) for f in paths.scan(root).failing)
    assert failing == [
        ("docker-run.sh", 1, "/mnt/nas/ckpt"),
        ("docker-run.sh", 1, "/mnt/nas/waymo"),
        ("host.py", 1, "/data/other/set"),
        ("host.py", 2, "/mnt/nas/waymo/raw"),
    ]
    pathfix.fix(root, scan_result=paths.scan(root))  # the binds' host sides become parameters, quoted
    assert "/data/waymo" in (root / "docker-run.sh").read_text()
    assert [f.file for f in paths.scan(root).failing] == []  # the container's side is still known, nothing more to fix
