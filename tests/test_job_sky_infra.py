"""`bundler job sky --infra`: resources.infra, and on Slurm (which refuses `image_id: docker:`
without Pyxis) the in-run route whose setup pulls the image and whose scripts run it with the
runtime BUNDLE_RUNTIME names. The scripts pass shellcheck and run for real with bash, the
runtimes standing in and recording their arguments and what they read on stdin; SkyPilot's
own loader reads the tasks (the virtual environment of tests/test_job_sky.py)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml

from bundler.jobs import launch
from tests.job_support import DIGEST, SKYPILOT_NODE_1_OF_2, copy_project, job, locked_project, recording_tools
from tests.test_job import shell_checks
from tests.test_job_sky import skypilot_python  # noqa: F401  (the session fixture)

REGISTRY = "registry.example.com:5000/team/example"
STUB = """#!{python}
import json, os, sys
name = os.path.basename(sys.argv[0])
stdin = sys.stdin.read() if len(sys.argv) > 1 and sys.argv[1] == "login" else None
with open(os.environ["STUB_LOG"], "a") as log:
    keep = ("APPTAINER_DOCKER_USERNAME", "APPTAINER_DOCKER_PASSWORD")
    log.write(json.dumps({{"tool": name, "argv": sys.argv[1:], "stdin": stdin, "env": {{k: os.environ.get(k) for k in keep}}}}) + "\\n")
if name == "apptainer" and sys.argv[1] == "pull":
    open(sys.argv[2], "w").close()
"""


@pytest.fixture
def project_of(tmp_path_factory, fake_index, tmp_path):
    def make(backend: str, card: str, lots: int) -> Path:
        return copy_project(locked_project(tmp_path_factory, fake_index, backend), tmp_path / backend, card=card, lots=lots)

    return make


def slurm_task(project: Path, *args: str) -> dict:
    completed, result = job(project, "sky", "--nodes", "2", "--image", f"{REGISTRY}@{DIGEST}", "--infra", "slurm", *args)
    assert completed.returncode == 0, completed.stderr
    return yaml.safe_load(Path(result["path"]).read_text())


def run_part(task: dict, part: str, folder: Path, **env: str) -> tuple[subprocess.CompletedProcess, list[dict]]:
    """``task[part]`` run by bash on node 1 of 2 with SkyPilot's variables, the runtimes recording their calls."""
    stubs, log = recording_tools(folder, ("apptainer", "docker", "podman"), STUB)
    variables = {
        "PATH": f"{stubs}{os.pathsep}{os.environ['PATH']}",
        "HOME": str(folder / "home"),
        "STUB_LOG": str(log),
        **SKYPILOT_NODE_1_OF_2,
        **task["envs"],
        **{name: value for name, value in (task.get("secrets") or {}).items() if value is not None},
        **env,
    }
    completed = subprocess.run(["bash", "-c", task[part]], env=variables, capture_output=True, text=True, timeout=60, cwd=folder)
    return completed, [json.loads(line) for line in log.read_text().splitlines()]


def test_on_slurm_the_task_has_no_image_id_and_its_scripts_are_shellcheck_clean(project_of, tmp_path):
    task = slurm_task(project_of("cuda", "H100 SXM", 8))
    assert task["resources"] == {"infra": "slurm", "accelerators": {"H100": 4}}
    assert task["envs"]["BUNDLE_RUNTIME"] == "apptainer" and task["envs"]["BUNDLE_IMAGE"] == f"{REGISTRY}@{DIGEST}"
    assert task["secrets"] == {"BUNDLE_REGISTRY_USERNAME": "", "BUNDLE_REGISTRY_PASSWORD": ""}  # names to fill in, no values
    for part in ("setup", "run"):
        script = tmp_path / f"{part}.sh"
        script.write_text("#!/bin/bash\n" + task[part])
        shell_checks(script)


def test_docker_pulls_then_runs_diagnostics_and_entry_on_the_host_network_with_the_allocated_cards(project_of, tmp_path):
    task = slurm_task(project_of("cuda", "H100 SXM", 8))
    image = f"{REGISTRY}@{DIGEST}"
    ran, setup = run_part(task, "setup", tmp_path, BUNDLE_RUNTIME="docker", CUDA_VISIBLE_DEVICES="2,3")
    assert ran.returncode == 0, ran.stderr
    assert [call["argv"][0] for call in setup] == ["pull", "run"]  # no login: no user name was given
    assert setup[0]["argv"] == ["pull", image]
    argv = setup[1]["argv"]
    assert argv[argv.index("--gpus") + 1] == '"device=2,3"' and "--network" in argv and argv[argv.index("--network") + 1] == "host"
    assert argv[argv.index("-v") + 1] == f"{tmp_path}/runs:/opt/bundle/project/runs" and (tmp_path / "runs").is_dir()
    assert argv[argv.index("--user") + 1] == f"{os.getuid()}:{os.getgid()}"
    tail = argv[argv.index("--entrypoint") + 1 :]
    rendezvous = ["--node-rank", "1", "--master-addr", "10.0.0.1", "--master-port"]
    assert tail == [launch.TORCHRUN, image, "--nnodes", "2", "--nproc-per-node", "1", *rendezvous, "29501", *launch.diagnostics_args()]
    ran, run = run_part(task, "run", tmp_path, BUNDLE_RUNTIME="docker")
    assert ran.returncode == 0, ran.stderr
    (call,) = run  # run pulls nothing: setup did
    argv = call["argv"]
    assert argv[argv.index("--gpus") + 1] == "all"  # no CUDA_VISIBLE_DEVICES: the node's cards
    tail = argv[argv.index("--entrypoint") + 1 :]
    assert tail[:4] == ["env", image, "PYTHONPATH=src", launch.TORCHRUN]  # the entry's own variables, set inside the container
    assert tail[-4:] == ["-m", "example.pilot", "--config", "config/pilot.json"]


def test_credentials_reach_the_runtime_on_stdin_or_its_environment_never_its_arguments(project_of, tmp_path):
    task = slurm_task(project_of("cuda", "H100 SXM", 8))
    secret = {"BUNDLE_REGISTRY_USERNAME": "robot", "BUNDLE_REGISTRY_PASSWORD": "s3cret-Value"}
    (tmp_path / "podman").mkdir()
    ran, calls = run_part(task, "setup", tmp_path / "podman", BUNDLE_RUNTIME="podman", **secret)
    assert ran.returncode == 0, ran.stderr
    login = calls[0]
    assert login["argv"] == ["login", "--username", "robot", "--password-stdin", "registry.example.com:5000"]
    assert login["stdin"] == "s3cret-Value" and not any("s3cret" in " ".join(call["argv"]) for call in calls)
    (tmp_path / "apptainer").mkdir()
    ran, calls = run_part(task, "setup", tmp_path / "apptainer", **secret)  # the default runtime
    assert ran.returncode == 0, ran.stderr
    pull, execute = calls
    assert pull["argv"][0] == "pull" and pull["argv"][2] == f"docker://{REGISTRY}@{DIGEST}"
    assert pull["env"] == {"APPTAINER_DOCKER_USERNAME": "robot", "APPTAINER_DOCKER_PASSWORD": "s3cret-Value"}
    assert execute["argv"][:2] == ["exec", "--nv"] and execute["argv"][execute["argv"].index("--bind") + 2].endswith(".sif")
    assert not any("s3cret" in " ".join(call["argv"]) for call in calls)


def test_a_runtime_the_task_does_not_know_stops_it_naming_the_choices(project_of, tmp_path):
    task = slurm_task(project_of("cuda", "H100 SXM", 8))
    ran, calls = run_part(task, "setup", tmp_path, BUNDLE_RUNTIME="singularity")
    assert ran.returncode == 2 and "BUNDLE_RUNTIME=singularity is not apptainer, docker or podman" in ran.stderr and calls == []


def test_the_docker_route_keeps_the_image_id_and_says_which_login_variables_to_pass(project_of):
    project = project_of("cuda", "H100 SXM", 8)
    completed, result = job(project, "sky", "--image", f"{REGISTRY}@{DIGEST}", "--infra", "k8s/my-context")
    assert completed.returncode == 0, completed.stderr
    task = yaml.safe_load(Path(result["path"]).read_text())
    assert task["resources"]["infra"] == "k8s/my-context" and task["resources"]["image_id"] == f"docker:{REGISTRY}@{DIGEST}"
    assert "secrets" not in task  # SkyPilot takes the three together: in the file they would force a login
    (note,) = [note for note in result["notes"] if "SKYPILOT_DOCKER" in note]
    flags = "--secret SKYPILOT_DOCKER_USERNAME --secret SKYPILOT_DOCKER_PASSWORD --secret SKYPILOT_DOCKER_SERVER=registry.example.com:5000"
    assert flags in note
    completed, result = job(project, "sky", "--image", "team/example@" + DIGEST, "-o", str(project / "hub.yaml"))
    assert completed.returncode == 0 and not [note for note in result["notes"] if "SKYPILOT_DOCKER" in note]  # Docker Hub


@pytest.mark.parametrize(
    ("engine", "infra", "said"), [("k8s", "aws", "option of `bundler job sky` only"), ("sky", "aws us-east-1", "not a")]
)
def test_infra_is_refused_elsewhere_and_when_it_is_no_infra(project_of, engine, infra, said):
    project = project_of("cuda", "H100 SXM", 8)
    completed, _ = job(project, engine, "--image", f"{REGISTRY}@{DIGEST}", "--infra", infra)
    assert completed.returncode == 2 and said in completed.stderr and "Traceback" not in completed.stderr
    assert not list(project.glob("job-*"))


LOADER = """
import json, sys
import sky

answers = {}
for path in sys.argv[1:]:
    task = sky.Task.from_yaml(path)
    login = None
    if "slurm" not in path:  # what `sky launch --secret SKYPILOT_DOCKER_...` gives the task
        import yaml
        config = yaml.safe_load(open(path))
        given = [("SKYPILOT_DOCKER_USERNAME", "robot"), ("SKYPILOT_DOCKER_PASSWORD", "pw")]
        given.append(("SKYPILOT_DOCKER_SERVER", "registry.example.com:5000"))
        (launched,) = sky.Task.from_yaml_config(config, secrets_overrides=given).resources
        login = launched._docker_login_config.server if launched._docker_login_config else None
    (resources,) = task.resources
    answers[path] = {
        "infra": resources.infra.to_str(),
        "image_id": sorted(resources.image_id.values()) if resources.image_id else None,
        "accelerators": resources.accelerators,
        "num_nodes": task.num_nodes,
        "secrets": {name: value.get_secret_value() for name, value in task.secrets.items()},
        "run": task.run,
        "login_server": login,
    }
print(json.dumps(answers))
"""


@pytest.mark.slow
def test_skypilots_loader_reads_the_slurm_and_the_infra_tasks(skypilot_python, project_of, tmp_path):  # noqa: F811
    project = project_of("cuda", "B200", 4)
    paths = {}
    for infra in ("slurm", "slurm/mycluster", "aws/us-east-1", "k8s"):
        out = tmp_path / f"{infra.replace('/', '-')}.yaml"
        completed, _ = job(project, "sky", "--nodes", "2", "--image", f"{REGISTRY}@{DIGEST}", "--infra", infra, "-o", str(out))
        assert completed.returncode == 0, completed.stderr
        paths[infra] = out
    loaded = subprocess.run(
        [skypilot_python, "-c", LOADER, *map(str, paths.values())],
        capture_output=True,
        text=True,
        timeout=300,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "SKYPILOT_DISABLE_USAGE_COLLECTION": "1"},
    )
    assert loaded.returncode == 0, loaded.stderr[-3000:]
    answers = json.loads(loaded.stdout.strip().splitlines()[-1])
    for infra, path in paths.items():
        answer = answers[str(path)]
        assert (
            answer["infra"].lower() == {"k8s": "kubernetes"}.get(infra, infra)
            and answer["num_nodes"] == 2
            and answer["accelerators"] == {"B200": 4}
        )
        if infra.startswith("slurm"):
            assert answer["image_id"] is None and "in_image" in answer["run"]
            assert answer["secrets"] == {"BUNDLE_REGISTRY_USERNAME": "", "BUNDLE_REGISTRY_PASSWORD": ""}
        else:
            assert answer["image_id"] == [f"docker:{REGISTRY}@{DIGEST}"] and answer["secrets"] == {}
            assert answer["login_server"] == "registry.example.com:5000"  # the note's --secret flags make SkyPilot log in
