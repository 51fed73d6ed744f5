"""The generated tree `bench/bench_paths.py` times the scan on, and grep's equivalent pattern."""

from __future__ import annotations

import json
import os
import random
import shutil
import tempfile
from pathlib import Path

# What grep looks for to find the same lines as the scan's triggers and shapes.
GREP_PATTERN = (
    r"/home/[A-Za-z0-9_$]|/[Uu]sers/[A-Za-z0-9_$]|/root(/|[^A-Za-z0-9_.-]|$)|[A-Za-z]:(\\\\|\\|/)[^/]"
    r"|/mnt/[A-Za-z]/[Uu]sers/|/tmp(/|$)|/var/tmp|/var/folders|/dev/shm|/content/g?drive|expanduser\(|Path\.home\(\)"
    r"|(HOME|USERPROFILE)[\"']|~[A-Za-z_]*/|\$HOME|\$\{HOME\}|%USERPROFILE%"
    r"|(^|[[:space:]\"'`=(,[]|-[A-Za-z])/[A-Za-z_][A-Za-z0-9_.+-]*(/|[\"'`]|[[:space:]]*(#|$))"  # any other absolute path
)

WORDS = [
    "model",
    "data",
    "train",
    "loss",
    "batch",
    "epoch",
    "tensor",
    "config",
    "value",
    "result",
    "layer",
    "weight",
    "bias",
    "optimizer",
    "scheduler",
    "device",
    "cuda",
    "float",
    "token",
    "label",
    "sample",
    "input",
    "output",
    "metric",
    "score",
    "document",
    "invoice",
    "contract",
    "letter",
    "report",
    "summary",
    "feature",
    "vector",
    "shape",
    "index",
    "cache",
]
HITS = (
    'DATA = "/home/alice/data/train.csv"\n',
    'ckpt = os.path.expanduser("~/checkpoints/run1")\n',
    '"model_dir": "C:\\\\Users\\\\bob\\\\models",\n',
    "out_dir: /tmp/experiment/out\n",
)


def _line(rng: random.Random, kind: str) -> str:
    words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 12)))
    if kind == "py":
        return f"    {rng.choice(WORDS)}_{rng.randint(0, 99)} = compute({words.replace(' ', ', ')!r})  # {words}\n"
    if kind == "json":
        return f'  "{rng.choice(WORDS)}_{rng.randint(0, 999)}": "{words}",\n'
    if kind == "yaml":
        return f"{rng.choice(WORDS)}_{rng.randint(0, 999)}: {words} /usr/share/{rng.choice(WORDS)}\n"
    if kind == "sh":
        return f'echo "{words}" >> "$LOG_DIR/{rng.choice(WORDS)}.log"\n'
    if rng.random() < 0.03:  # decoys: URLs holding /home/, which are not paths
        return f"The {words} of https://example.org/home/{rng.choice(WORDS)} is documented.\n"
    return f"The {words} is documented in section {rng.randint(1, 40)}.\n"


def generate_tree(root: Path, files: int, megabytes: int) -> None:
    """Write ``files`` files totalling about ``megabytes`` MB; ~2% of them hold a hit."""
    rng = random.Random(20261130)
    kinds = {"py": ".py", "json": ".json", "yaml": ".yaml", "sh": ".sh", "md": ".md"}
    blocks = {}
    per_file = megabytes * 1024 * 1024 // files
    for kind in kinds:
        text, size = [], 0
        while size < per_file * 2:
            line = _line(rng, kind)
            text.append(line)
            size += len(line)
        blocks[kind] = "".join(text)
    staging = Path(tempfile.mkdtemp(prefix=root.name + ".", dir=root.parent))
    for number in range(files):
        kind = list(kinds)[number % len(kinds)]
        folder = staging / f"pkg{number % 50:02d}" / f"mod{number % 400:03d}"
        folder.mkdir(parents=True, exist_ok=True)
        offset = rng.randint(0, per_file)
        body = blocks[kind][offset : offset + per_file]
        if number % 50 == 0:
            body = HITS[number % len(HITS)] + body
        (folder / f"file{number:05d}{kinds[kind]}").write_text(f"# file {number}\n{body}\n", encoding="utf-8")
    (staging / ".complete").write_text(json.dumps({"files": files, "megabytes": megabytes}))
    if root.exists():
        shutil.rmtree(root)
    staging.rename(root)


def tree_size(root: Path) -> int:
    total = 0
    for folder, _, names in os.walk(root):
        for name in names:
            total += os.path.getsize(os.path.join(folder, name))
    return total
