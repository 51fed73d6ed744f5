"""`bundler job k8s|slurm|sky`: real locked projects in, job files out, each checked by the
engine's own rules where they can run here: Kubernetes' schemas (kubernetes-validate,
strict, offline), bash -n and shellcheck, and the sbatch script executed for real by bash
with the cluster's commands (srun, apptainer, scontrol) standing in and recording their
arguments. SkyPilot's own loader: tests/test_job_sky.py."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from bundler.jobs import jobfile, launch
from tests.conftest import tool
from tests.job_support import DIGEST, SKYPILOT_NODE_1_OF_2, copy_project, job, locked_project

REGISTRY = "registry.example.com:5000/team/example"


@pytest.fixture
def project_of(tmp_path_factory, fake_index, tmp_path):
    """A copy of the locked project of a backend, with the order in plan.toml set."""

    def make(backend: str, card: str, lots: int) -> Path:
        return copy_project(locked_project(tmp_path_factory, fake_index, backend), tmp_path / backend, card=card, lots=lots)

    return make


def lock_sha(project: Path) -> str:
    return hashlib.sha256((project / "requirements-rebuild.txt").read_bytes()).hexdigest()


def shell_checks(script: Path) -> None:
    parsed = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
    assert parsed.returncode == 0, parsed.stderr
    linted = subprocess.run([tool("shellcheck"), "--shell=bash", str(script)], capture_output=True, text=True)
    assert linted.returncode == 0, linted.stdout


# --- Kubernetes -----------------------------------------------------------------------------
def k8s_documents(path: Path) -> list[dict]:
    return list(yaml.safe_load_all(path.read_text()))


def validate_k8s(documents: list[dict]) -> None:
    import kubernetes_validate

    for document in documents:
        kubernetes_validate.validate(document, kubernetes_validate.latest_version(), strict=True)


def test_k8s_b200_lots_split_over_two_nodes_validate_against_kubernetes_schemas(project_of):
    project = project_of("cuda", "B200", 4)
    completed, result = job(project, "k8s", "--nodes", "2", "--image", f"{REGISTRY}:1@{DIGEST}")
    assert completed.returncode == 0, completed.stderr
    assert (result["nodes"], result["gpus_per_node"], result["processes_per_node"], result["cards_per_lot"]) == (2, 4, 4, 2)
    documents = k8s_documents(Path(result["path"]))
    validate_k8s(documents)
    service, indexed = documents
    name = result["name"]
    assert service["spec"]["clusterIP"] == "None" and service["spec"]["publishNotReadyAddresses"] is True
    assert indexed["spec"]["completionMode"] == "Indexed" and indexed["spec"]["completions"] == indexed["spec"]["parallelism"] == 2
    pod = indexed["spec"]["template"]["spec"]
    assert pod["subdomain"] == service["metadata"]["name"] == name
    assert service["spec"]["selector"].items() <= indexed["spec"]["template"]["metadata"]["labels"].items()
    assert pod["securityContext"]["runAsNonRoot"] is True and pod["securityContext"]["runAsUser"] == 10001
    assert pod["volumes"] == [{"name": "dshm", "emptyDir": {"medium": "Memory"}}]
    (diagnostics,), (entry,) = pod["initContainers"], pod["containers"]
    for container in (diagnostics, entry):
        assert container["image"] == f"{REGISTRY}@{DIGEST}"
        assert container["resources"]["limits"] == {"nvidia.com/gpu": 4}
        assert {"name": "dshm", "mountPath": "/dev/shm"} in container["volumeMounts"]
        assert container["env"][0]["valueFrom"]["fieldRef"]["fieldPath"].endswith("['batch.kubernetes.io/job-completion-index']")
    master = f"{name}-0.{name}"
    assert diagnostics["command"] == [
        launch.TORCHRUN,
        *["--nnodes", "2", "--nproc-per-node", "1", "--node-rank", "$(NODE_RANK)", "--master-addr", master, "--master-port", "29501"],
        *["/opt/bundle/diagnostics/run.py", "--project", "/opt/bundle/project"],
    ]
    assert entry["command"][:11] == [launch.TORCHRUN, "--nnodes", "2", "--nproc-per-node", "4", "--node-rank", "$(NODE_RANK)"] + [
        "--master-addr",
        master,
        "--master-port",
        "29500",
    ]
    assert entry["command"][11:] == ["-m", "example.pilot", "--config", "config/pilot.json"]
    assert {"name": "PYTHONPATH", "value": "src"} in entry["env"]
    for document in documents:
        assert document["metadata"]["annotations"]["bundler.io/lock-sha256"] == lock_sha(project)
        assert document["metadata"]["annotations"]["bundler.io/image"] == f"{REGISTRY}:1@{DIGEST}"


def test_the_schema_check_catches_what_a_cluster_would_refuse(project_of):
    project = project_of("cuda", "H100 SXM", 1)
    completed, result = job(project, "k8s", "--image", f"{REGISTRY}:1")
    assert completed.returncode == 0, completed.stderr
    import kubernetes_validate

    documents = k8s_documents(Path(result["path"]))
    documents[1]["spec"]["template"]["spec"]["containers"][0]["resources"]["limit"] = {"nvidia.com/gpu": 1}  # misspelt
    with pytest.raises(kubernetes_validate.ValidationError):
        validate_k8s(documents)


def test_k8s_on_rocm_asks_for_amd_gpus_and_on_cpu_for_none(project_of):
    rocm = project_of("rocm", "MI300X", 2)
    completed, result = job(rocm, "k8s", "--nodes", "2", "--image", f"{REGISTRY}:rocm")
    assert completed.returncode == 0, completed.stderr
    documents = k8s_documents(Path(result["path"]))
    validate_k8s(documents)
    assert documents[1]["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"] == {"amd.com/gpu": 1}
    assert any("pinned by tag only" in note for note in result["notes"])

    cpu = project_of("cpu", "RTX 4090", 1)
    completed, result = job(cpu, "k8s", "--image", f"{REGISTRY}:cpu")
    assert completed.returncode == 0, completed.stderr
    documents = k8s_documents(Path(result["path"]))
    validate_k8s(documents)
    container = documents[1]["spec"]["template"]["spec"]["containers"][0]
    assert "resources" not in container and container["command"][4] == "1" and result["gpus_per_node"] == 0


def test_a_dollar_in_the_entry_reaches_kubernetes_escaped(project_of):
    project = project_of("cpu", "RTX 4090", 1)
    bundle = project / "bundle.toml"
    bundle.write_text(bundle.read_text().replace("--config config/pilot.json", "--tag '$(HOME)x'"))
    completed, result = job(project, "k8s", "--image", f"{REGISTRY}:1")
    assert completed.returncode == 0, completed.stderr
    command = k8s_documents(Path(result["path"]))[1]["spec"]["template"]["spec"]["containers"][0]["command"]
    assert command[-2:] == ["--tag", "$$(HOME)x"]  # Kubernetes turns $$ back into $ and expands nothing


# --- Slurm ------------------------------------------------------------------------------------
STUB = """#!{python}
import json, os, sys
name = os.path.basename(sys.argv[0])
with open(os.environ["STUB_LOG"], "a") as log:
    keep = ("BUNDLE_LOCK_SHA256", "APPTAINERENV_PYTHONPATH")
    log.write(json.dumps({{"tool": name, "argv": sys.argv[1:], "env": {{k: os.environ.get(k) for k in keep}}}}) + "\\n")
if name == "scontrol":
    print("gpu01\\ngpu02")
if name == "apptainer" and sys.argv[1] == "build":
    open(sys.argv[2], "w").close()
calls = [json.loads(line) for line in open(os.environ["STUB_LOG"]) if '"srun"' in line]
if name == "srun" and os.environ.get("STUB_FAIL_DIAGNOSTICS") and len(calls) == 1:
    sys.exit(14)
"""


def run_sbatch(script: Path, folder: Path, **extra: str) -> tuple[subprocess.CompletedProcess, list[dict]]:
    """Run the script with bash as sbatch would on a 2-node allocation, the cluster's commands recording their arguments."""
    stubs = folder / "bin"
    stubs.mkdir(exist_ok=True)
    for name in ("srun", "apptainer", "scontrol"):
        (stubs / name).write_text(STUB.format(python=sys.executable))
        (stubs / name).chmod(0o755)
    log = folder / "calls.jsonl"
    log.write_text("")
    env = {
        **os.environ,
        "PATH": f"{stubs}{os.pathsep}{os.environ['PATH']}",
        "STUB_LOG": str(log),
        "SLURM_NNODES": "2",
        "SLURM_JOB_ID": "4242",
        "SLURM_JOB_NODELIST": "gpu[01-02]",
        "SLURM_SUBMIT_DIR": str(folder),
        **extra,
    }
    completed = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, timeout=120, cwd=folder)
    return completed, [json.loads(line) for line in log.read_text().splitlines()]


def slurm_job_of_an_export(project: Path, archive: Path) -> tuple[Path, Path, dict]:
    """A 2-node sbatch script for ``archive``, written as `bundler build --export` writes one (with FILE.tar.sha256)."""
    archive.write_bytes(b"exported")
    archive.with_name(archive.name + ".sha256").write_text(f"{hashlib.sha256(b'exported').hexdigest()}  {archive.name}\n")
    completed, result = job(project, "slurm", "--nodes", "2", "--image", str(archive), "-o", str(archive.parent / "job.sbatch"))
    assert completed.returncode == 0, completed.stderr
    script = Path(result["path"])
    shell_checks(script)
    return archive, script, result


def test_slurm_script_is_shellcheck_clean_and_runs_diagnostics_then_the_entry(project_of, tmp_path):
    project = project_of("cuda", "B200", 2)
    archive, script, result = slurm_job_of_an_export(project, tmp_path / "my image's.tar")  # a space and a quote: quoting must hold
    text = script.read_text()
    assert text.startswith("#!/bin/bash\n") and "#SBATCH --nodes=2\n" in text and "#SBATCH --gpus-per-node=2\n" in text
    fields, _ = jobfile.split(text)
    assert fields["lock-sha256"] == lock_sha(project) and fields["image"] == str(archive)

    ran, calls = run_sbatch(script, tmp_path)
    assert ran.returncode == 0, ran.stderr
    sif = f"{tmp_path}/{result['name']}-{lock_sha(project)[:12]}.sif"
    assert [call["tool"] for call in calls] == ["apptainer", "scontrol", "srun", "srun"]
    assert calls[0]["argv"] == ["build", sif, f"docker-archive://{archive}"]
    container = ["--ntasks-per-node=1", "--kill-on-bad-exit=1", "apptainer", "exec", "--nv", "--pwd", "/opt/bundle/project"]
    container += ["--bind", f"{tmp_path}/runs:/opt/bundle/project/runs", sif, launch.TORCHRUN, "--nnodes", "2"]
    diagnostics, entry = calls[2]["argv"], calls[3]["argv"]
    assert diagnostics == container + ["--nproc-per-node", "1", "--rdzv-backend", "c10d", "--rdzv-endpoint", "gpu01:29501"] + [
        "--rdzv-id",
        "4242",
        *launch.diagnostics_args(),
    ]
    assert entry == container + ["--nproc-per-node", "2", "--rdzv-backend", "c10d", "--rdzv-endpoint", "gpu01:29500"] + [
        "--rdzv-id",
        "4242",
        *["-m", "example.pilot", "--config", "config/pilot.json"],
    ]
    assert calls[3]["env"] == {"BUNDLE_LOCK_SHA256": lock_sha(project), "APPTAINERENV_PYTHONPATH": "src"}
    assert (tmp_path / "runs").is_dir()


def test_slurm_stops_when_the_diagnostics_fail_or_the_archive_is_not_the_exported_one(project_of, tmp_path):
    project = project_of("cpu", "RTX 4090", 2)
    archive, script, result = slurm_job_of_an_export(project, tmp_path / "example.tar")
    assert "--gpus-per-node" not in script.read_text() and "--nv" not in script.read_text()

    ran, calls = run_sbatch(script, tmp_path, STUB_FAIL_DIAGNOSTICS="1")
    assert ran.returncode == 14
    assert [call["tool"] for call in calls] == ["apptainer", "scontrol", "srun"]  # the entry never started

    archive.write_bytes(b"exported, then changed")
    (tmp_path / f"{result['name']}-{lock_sha(project)[:12]}.sif").unlink()
    ran, calls = run_sbatch(script, tmp_path)
    assert ran.returncode != 0 and "FAILED" in ran.stdout + ran.stderr
    assert calls == []


def test_slurm_takes_a_registry_reference_or_a_sif(project_of, tmp_path):
    project = project_of("rocm", "MI300X", 1)
    completed, result = job(project, "slurm", "--image", f"{REGISTRY}@{DIGEST}", "-o", str(tmp_path / "a.sbatch"))
    assert completed.returncode == 0, completed.stderr
    shell_checks(Path(result["path"]))
    ran, calls = run_sbatch(Path(result["path"]), tmp_path)
    assert ran.returncode == 0, ran.stderr
    assert calls[0]["argv"][2] == f"docker://{REGISTRY}@{DIGEST}" and "--rocm" in calls[2]["argv"]

    completed, result = job(project, "slurm", "--image", "images/example.sif", "-o", str(tmp_path / "b.sbatch"))
    assert completed.returncode == 0, completed.stderr
    shell_checks(Path(result["path"]))
    ran, calls = run_sbatch(Path(result["path"]), tmp_path)
    assert [call["tool"] for call in calls] == ["scontrol", "srun", "srun"] and "images/example.sif" in calls[1]["argv"]


# --- SkyPilot's scripts (its loader: test_job_sky.py) --------------------------------------------
def test_sky_setup_and_run_scripts_are_shellcheck_clean(project_of, tmp_path):
    project = project_of("cuda", "H100 SXM", 8)
    completed, result = job(project, "sky", "--nodes", "2", "--image", f"{REGISTRY}@{DIGEST}")
    assert completed.returncode == 0, completed.stderr
    task = yaml.safe_load(Path(result["path"]).read_text())
    assert task["resources"] == {"image_id": f"docker:{REGISTRY}@{DIGEST}", "accelerators": {"H100": 4}}
    assert task["num_nodes"] == 2 and task["envs"]["BUNDLE_LOCK_SHA256"] == lock_sha(project)
    for part in ("setup", "run"):
        script = tmp_path / f"{part}.sh"
        script.write_text("#!/bin/bash\n" + task[part])
        shell_checks(script)
    # both scripts run for real on "node 1" with SkyPilot's variables; torchrun and the image's folder stand in
    (tmp_path / "bin").mkdir()
    torchrun = tmp_path / "bin" / "torchrun"
    torchrun.write_text(STUB.format(python=sys.executable))
    torchrun.chmod(0o755)
    env = {
        **os.environ,
        "STUB_LOG": str(tmp_path / "calls.jsonl"),
        **SKYPILOT_NODE_1_OF_2,
    }
    for part in ("setup", "run"):
        text = task[part].replace(launch.TORCHRUN, str(torchrun)).replace("cd /opt/bundle/project", f"cd {tmp_path}")
        ran = subprocess.run(["bash", "-c", text], env=env, capture_output=True, text=True, timeout=60)
        assert ran.returncode == 0, ran.stderr
    setup, run = (json.loads(line)["argv"] for line in (tmp_path / "calls.jsonl").read_text().splitlines())
    rendezvous = ["--node-rank", "1", "--master-addr", "10.0.0.1", "--master-port"]
    assert setup == ["--nnodes", "2", "--nproc-per-node", "1", *rendezvous, "29501", *launch.diagnostics_args()]
    assert run == ["--nnodes", "2", "--nproc-per-node", "4", *rendezvous, "29500", "-m", "example.pilot", "--config", "config/pilot.json"]


# --- what every engine shares -----------------------------------------------------------------------
@pytest.mark.parametrize(("engine", "launcher"), [("sky", "sky launch -c example"), ("k8s", "kubectl apply -f"), ("slurm", "sbatch")])
def test_regenerating_an_unchanged_job_rewrites_nothing_and_a_new_image_replaces_it(project_of, engine, launcher):
    project = project_of("cuda", "RTX 4090", 1)
    completed, first = job(project, engine, "--image", f"{REGISTRY}:1")
    assert completed.returncode == 0 and first["written"] is True
    path = Path(first["path"])
    assert path.parent == project and path.name.startswith(f"job-{engine}.")
    before = path.stat().st_mtime_ns
    completed, again = job(project, engine, "--image", f"{REGISTRY}:1")
    assert completed.returncode == 0, completed.stderr
    assert again["written"] is False and path.stat().st_mtime_ns == before
    assert again["launch_command"] == f"{launcher} {path}"
    completed, newer = job(project, engine, "--image", f"{REGISTRY}:2")
    assert completed.returncode == 0 and newer["written"] is True
    assert jobfile.split(path.read_text())[0]["image"] == f"{REGISTRY}:2"


def test_without_image_the_local_tag_is_used_and_the_note_says_how_to_push(project_of):
    project = project_of("cuda", "RTX 4090", 1)
    completed, result = job(project, "k8s")
    assert completed.returncode == 0, completed.stderr
    assert result["image"]["given"].startswith("bundler/") and lock_sha(project)[:12] in result["image"]["given"]
    assert "bundler build --push" in result["notes"][0] and "Note: no --image given" in completed.stderr


@pytest.mark.parametrize(
    ("entry", "env", "args"),
    [
        ("PYTHONPATH=src python -m pkg.train --lr 1e-3", (("PYTHONPATH", "src"),), ("-m", "pkg.train", "--lr", "1e-3")),
        ("python3.11 train.py --config 'a b.json'", (), ("train.py", "--config", "a b.json")),
        ("bash run.sh", (), ("--no-python", "bash", "run.sh")),
        ("python -u -m pkg", (), ("--no-python", "python", "-u", "-m", "pkg")),
    ],
)
def test_the_entry_becomes_torchruns_arguments(entry, env, args, tmp_path):
    class Bundle:
        path = tmp_path / "bundle.toml"

    Bundle.entry = entry
    assert launch.entry(Bundle) == launch.Entry(env, args)


@pytest.mark.parametrize(
    ("project_name", "package", "expected"),
    [("Document Classifier Pilot", "doc", "document-classifier-pilot"), ("2024 Pilot!", "p", "job-2024-pilot"), ("ÉÉ", "my_pkg", "my-pkg")],
)
def test_job_names_are_labels_kubernetes_accepts(project_name, package, expected):
    from bundler.jobs.inputs import JobInputs

    class Bundle:
        name = project_name

    Bundle.package = package
    name = JobInputs("k8s", Bundle, "0" * 64, "H200", 1, 1, 1, None).name
    assert name == expected and len(name) <= 40


def test_the_help_lists_the_three_engines():
    completed = subprocess.run([sys.executable, "-m", "bundler", "job", "--help"], capture_output=True, text=True, timeout=60)
    assert completed.returncode == 0
    assert all(engine in completed.stdout for engine in ("sky", "k8s", "slurm"))
