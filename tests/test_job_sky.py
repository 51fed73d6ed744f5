"""`bundler job sky` checked by SkyPilot's own loader (``sky.Task.from_yaml``, offline).

The skypilot package would downgrade click (and bring some sixty packages) into the
environment bundler runs in, so it lives in a virtual environment of its own, made once
and kept in pytest's cache folder (the session's temporary folder under -p
no:cacheprovider); the loader runs there in a subprocess that reads every task at once.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.job_support import DIGEST, copy_project, job, locked_project

SKYPILOT = "skypilot>=0.14,<1"
REGISTRY = "registry.example.com/team/example"
LOADER = """
import json, sys
import sky

answers = {}
for path in sys.argv[1:]:
    try:
        task = sky.Task.from_yaml(path)
    except Exception as error:
        answers[path] = {"error": f"{type(error).__name__}: {error}"}
        continue
    (resources,) = task.resources
    image = resources.image_id  # {region or None: image}
    answers[path] = {
        "num_nodes": task.num_nodes,
        "accelerators": resources.accelerators,
        "image_id": sorted(image.values()) if isinstance(image, dict) else image,
        "envs": dict(task.envs),
        "setup": task.setup,
        "run": task.run,
    }
print(json.dumps(answers))
"""


@pytest.fixture(scope="session")
def skypilot_python(request, tmp_path_factory) -> Path:
    """The interpreter of a virtual environment holding skypilot (made once, reused while it imports)."""
    cache = getattr(request.config, "cache", None)
    root = Path(cache.mkdir("skypilot-venv")) if cache is not None else tmp_path_factory.getbasetemp() / "skypilot-venv"
    venv, ready = root / "venv", root / "ready.txt"
    python = venv / "bin" / "python"
    if ready.is_file() and ready.read_text() == SKYPILOT and subprocess.run([python, "-c", "import sky"], timeout=300).returncode == 0:
        return python
    subprocess.run([sys.executable, "-m", "venv", "--clear", "--system-site-packages", str(venv)], check=True, timeout=300)
    installed = subprocess.run([python, "-m", "pip", "install", "-q", SKYPILOT], capture_output=True, text=True, timeout=1800)
    if installed.returncode != 0:
        pytest.fail(f"{SKYPILOT} could not be installed from PyPI into {venv}: {installed.stderr[-2000:]}")
    ready.write_text(SKYPILOT)
    return python


def load_tasks(python: Path, *paths: Path) -> dict:
    loaded = subprocess.run(
        [python, "-c", LOADER, *map(str, paths)],
        capture_output=True,
        text=True,
        timeout=300,
        env={"PATH": "/usr/bin:/bin", "HOME": str(paths[0].parent), "SKYPILOT_DISABLE_USAGE_COLLECTION": "1"},
    )
    assert loaded.returncode == 0, loaded.stderr[-3000:]
    return json.loads(loaded.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_skypilots_loader_reads_every_task_bundler_writes(skypilot_python, tmp_path_factory, fake_index, tmp_path):
    cases = {  # backend, card, lots, nodes -> the accelerators SkyPilot must read
        "cuda": ("cuda", "B200", 4, "2", {"B200": 4}),
        "rocm": ("rocm", "MI300X", 8, "1", {"MI300X": 8}),
        "cpu": ("cpu", "RTX 4090", 2, "2", None),
    }
    written = {}
    for name, (backend, card, lots, nodes, _) in cases.items():
        project = copy_project(locked_project(tmp_path_factory, fake_index, backend), tmp_path / name, card=card, lots=lots)
        completed, result = job(project, "sky", "--nodes", nodes, "--image", f"{REGISTRY}:{name}@{DIGEST}")
        assert completed.returncode == 0, completed.stderr
        written[name] = (Path(result["path"]), result)
    broken = tmp_path / "broken.yaml"
    task = yaml.safe_load(written["cuda"][0].read_text())
    broken.write_text(yaml.safe_dump({**task, "num_node": 2}))  # a misspelt field, as a hand edit would make it

    answers = load_tasks(skypilot_python, *(path for path, _ in written.values()), broken)
    for name, (path, result) in written.items():
        answer = answers[str(path)]
        assert "error" not in answer, answer
        assert answer["num_nodes"] == result["nodes"]
        assert answer["accelerators"] == cases[name][4]
        assert answer["image_id"] == [f"docker:{REGISTRY}@{DIGEST}"]
        assert answer["envs"]["BUNDLE_LOCK_SHA256"] == result["lock_sha256"]
        assert "/opt/bundle/diagnostics/run.py" in answer["setup"] and "SKYPILOT_NODE_RANK" in answer["run"]
    assert "num_node" in answers[str(broken)]["error"]
