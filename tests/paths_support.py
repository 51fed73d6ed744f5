"""Shared helpers of the paths, fix and check tests: a laptop's repository as files."""

from __future__ import annotations

import json
from pathlib import Path

NOTEBOOK = {
    "cells": [
        {
            "cell_type": "code",
            "execution_count": 1,
            "metadata": {},
            "outputs": [{"name": "stdout", "output_type": "stream", "text": ["saved to /home/alice/datasets/clean.csv\n"]}],
            "source": ["import pandas as pd\n", 'df = pd.read_csv("/home/alice/datasets/train.csv")\n'],
        }
    ],
    "metadata": {"papermill": {"input_path": "/home/alice/laptop_repo/notebooks/explore.ipynb"}},
    "nbformat": 4,
    "nbformat_minor": 5,
}

LAPTOP_REPO = {
    "src/app/__init__.py": "",
    "src/app/train.py": (
        '"""Train the classifier."""\n'  # 1
        "import os\n"  # 2
        "from pathlib import Path\n"  # 3
        "\n"  # 4
        'DATA = "/home/alice/datasets/train.csv"\n'  # 5 home
        'CKPT = os.path.expanduser("~/checkpoints")\n'  # 6 home-lookup
        'CACHE = Path.home() / ".cache"\n'  # 7 home-lookup of a portable tool folder: information
        'MODEL = "C:\\\\Users\\\\bob\\\\models\\\\m.pt"\n'  # 8 windows-user
        'URL = "https://example.com/home/alice/data.csv"\n'  # 9 decoy: URL
        'HOMEWORK = "/homework/notes.txt"\n'  # 10 absolute: no home, but a folder of one machine
        'SYSTEM = "/usr/share/dict/words"\n'  # 11 decoy: system path
        'OUT = "/tmp/experiment/out"  # results go here\n'  # 12 temp-dir (an output)
        'SCRATCH = "/tmp/scratch"\n'  # 13 decoy: temp, not written to
        'WSL = "/mnt/c/Users/bob/corpus"\n'  # 14 wsl-user
        "MASK = ~0x0F / 2\n"  # 15 decoy: operator
    ),
    "scripts/run.sh": "#!/bin/sh\npython -m app.train --data $HOME/datasets\ncp results.json ~/results/\n",
    "config/train.yaml": (
        "data_dir: /Users/alice/datasets\noutput_dir: /home/alice/laptop_repo/runs/exp1\ndocs_url: https://github.com/home/x\n"
    ),
    "config/settings.json": '{\n  "model_dir": "C:\\\\Users\\\\bob\\\\models",\n  "home_page": "http://example.org/Users/bob"\n}\n',
    "requirements.txt": "numpy~=1.26\n-e /home/alice/src/mylib\n",
    "Dockerfile": "FROM python:3.11-slim\nRUN rm -rf /tmp/*\n",
    "notebooks/explore.ipynb": json.dumps(NOTEBOOK, indent=1) + "\n",
    "README.md": "# Laptop repo\nData lives in /home/alice/datasets.\n",
    "runs/.gitkeep": "",
}

INFORMATION = {("src/app/train.py", 7, "home-lookup")}
EXPECTED = {
    ("src/app/train.py", 5, "home"),
    ("src/app/train.py", 6, "home-lookup"),
    ("src/app/train.py", 8, "windows-user"),
    ("src/app/train.py", 10, "absolute"),
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


def found_in(root: Path, name: str | None = None) -> list[tuple[str, int, str, str]]:
    """(file, line, shape, category) of every finding of a scan of ``root`` (of one file with ``name``)."""
    from bundler.portability import scan as paths

    return [(f.file, f.line, f.shape, f.category) for f in paths.scan(root).findings if name is None or f.file == name]


def code_notebook(*sources: list[str]) -> str:
    """A notebook of one code cell (no outputs) per source."""
    cells = [{"cell_type": "code", "execution_count": 1, "metadata": {}, "source": s, "outputs": []} for s in sources]
    return json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1) + "\n"


def output_notebook(source: list[str], outputs: list[dict]) -> str:
    """A notebook of one code cell with ``outputs`` (nbformat output dicts)."""
    cell = {"cell_type": "code", "execution_count": 1, "metadata": {}, "source": source, "outputs": outputs}
    return json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1) + "\n"
