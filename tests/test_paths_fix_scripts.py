"""`bundler paths --fix` on shell scripts and Hydra/OmegaConf configs: proven by running them."""

from __future__ import annotations

import os
import shutil
import subprocess

import yaml
from omegaconf import OmegaConf

from bundler.portability import fix as pathfix
from tests.paths_support import build_tree

SCRIPT = (
    "#!/bin/bash\n"
    "#SBATCH --gres=gpu:1\n"
    "set -eu\n"
    "echo data=/home/alice/data/train\n"  # a parameter, unquoted
    "echo \"log='/home/alice/data/log x'\"\n"  # inside double quotes
    "echo 'ckpt=/home/alice/data/ckpt'\n"  # inside single quotes
    "cat /home/alice/proj/assets/x.txt\n"  # inside the project: from the script's own place
    "rsync -a out/ alice@cluster:/home/alice/runs/\n"  # on another machine: left alone
    'ssh cluster "ls /home/alice/runs"\n'
    "# was /home/alice/data/old\n"
)


def _run(script, cwd, env):
    return subprocess.run(["bash", str(script)], cwd=cwd, env=env, capture_output=True, text=True, check=False, timeout=60)


def test_a_script_reads_parameters_from_env_local_and_stops_loudly_without(tmp_path):
    project = build_tree(tmp_path / "proj", {"scripts/job.sh": SCRIPT, "assets/x.txt": "asset\n"})
    result = pathfix.fix(project)
    assert [c.status for c in result.changes] == ["fixed"]
    text = (project / "scripts/job.sh").read_text()
    assert text.splitlines()[:2] == ["#!/bin/bash", "#SBATCH --gres=gpu:1"]  # the scheduler's lines stay first
    assert 'echo data="${DATA_ROOT}"/train' in text
    assert "echo \"log='${DATA_ROOT}/log x'\"" in text
    assert "echo 'ckpt='\"${DATA_ROOT}\"'/ckpt'" in text
    assert 'cat "${_bundle_root}"/assets/x.txt' in text
    assert "alice@cluster:/home/alice/runs/" in text and 'ssh cluster "ls /home/alice/runs"' in text
    assert "# was ${DATA_ROOT}/old" in text
    # Moved to another machine with only .env.local, run from another folder: the same output.
    moved = tmp_path / "rented/project"
    shutil.copytree(project, moved)
    (moved / ".env.local").write_text("DATA_ROOT=/mnt/data\n")
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    stub = tmp_path / "bin"
    stub.mkdir()
    for tool in ("rsync", "ssh"):  # the remote commands must not run here
        (stub / tool).write_text('#!/bin/sh\necho remote "$@"\n')
        (stub / tool).chmod(0o755)
    env = {"PATH": f"{stub}:{os.environ['PATH']}", "HOME": str(tmp_path)}
    completed = _run(moved / "scripts/job.sh", elsewhere, env)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.splitlines()[:4] == ["data=/mnt/data/train", "log='/mnt/data/log x'", "ckpt=/mnt/data/ckpt", "asset"]
    # Without .env.local nor the variable, the script stops before doing anything, naming it.
    (moved / ".env.local").unlink()
    completed = _run(moved / "scripts/job.sh", elsewhere, env)
    assert completed.returncode != 0 and completed.stdout == ""
    assert "path parameter DATA_ROOT is not set" in completed.stderr
    # The environment wins.
    completed = _run(moved / "scripts/job.sh", elsewhere, env | {"DATA_ROOT": "/env/data"})
    assert completed.stdout.splitlines()[0] == "data=/env/data/train"


def test_a_second_fix_of_a_script_changes_nothing_and_a_later_path_joins_the_block(tmp_path):
    project = build_tree(tmp_path / "p", {"run.sh": "#!/bin/sh\nls ~/data/x\n"})
    pathfix.fix(project)
    first = (project / "run.sh").read_text()
    assert [c.status for c in pathfix.fix(project).changes] == []
    (project / "run.sh").write_text(first + "ls /home/alice/models/m\n")
    pathfix.fix(project)
    text = (project / "run.sh").read_text()
    assert text.count("# --- path parameters") == 1 and ': "${MODELS_ROOT:=' in text and ': "${DATA_ROOT:=' in text


def test_a_word_whose_meaning_the_shell_would_change_is_refused(tmp_path):
    original = '#!/bin/sh\nEXE="/home/${SLURM_USER}/bin/run"\n'  # the value holds a variable the script expands itself
    project = build_tree(tmp_path / "p", {"job.sh": original})
    [change] = pathfix.fix(project).changes
    assert change.status == "refused" and "expands a changed word differently" in change.reason
    assert (project / "job.sh").read_text() == original and sorted(os.listdir(project)) == ["job.sh"]


HYDRA_APP = (
    "import hydra\n\n@hydra.main(config_path='conf', config_name='config', version_base=None)\ndef main(cfg):\n    print(cfg.data.root)\n"
)


def test_hydra_configs_use_omegaconfs_environment_resolver(tmp_path):
    config = "data:\n  root: /home/alice/data/coco\n  cache: ${data.root}/cache\nmodel:\n  ckpt: '/home/alice/data/ckpt/last.pt'  # best\n"
    project = build_tree(tmp_path / "p", {"train.py": HYDRA_APP, "conf/config.yaml": config, "other.yaml": "root: /home/alice/data/x\n"})
    result = pathfix.fix(project)
    status = {c.file: c.status for c in result.changes}
    assert status == {"conf/config.yaml": "fixed", "other.yaml": "unchanged"}  # other.yaml: read by unknown code
    text = (project / "conf/config.yaml").read_text()
    assert "root: ${oc.env:DATA_ROOT}/coco" in text and "ckpt: '${oc.env:DATA_ROOT}/ckpt/last.pt'" in text
    os.environ["DATA_ROOT"] = "/mnt/data"
    try:
        resolved = OmegaConf.to_container(OmegaConf.create(text), resolve=True)
    finally:
        del os.environ["DATA_ROOT"]
    assert resolved == {"data": {"root": "/mnt/data/coco", "cache": "/mnt/data/coco/cache"}, "model": {"ckpt": "/mnt/data/ckpt/last.pt"}}
    assert yaml.safe_load(text).keys() == yaml.safe_load(config).keys()


def test_an_omegaconf_file_is_recognised_by_its_interpolations(tmp_path):
    project = build_tree(tmp_path / "p", {"cfg.yaml": "out: ${oc.env:OUT,runs}\ndata: /Users/bob/data/x\n"})
    [change] = pathfix.fix(project).changes
    assert change.status == "fixed"
    assert (project / "cfg.yaml").read_text() == "out: ${oc.env:OUT,runs}\ndata: ${oc.env:DATA_ROOT}/x\n"
