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
import json, os, subprocess, sys
name = os.path.basename(sys.argv[0])
with open(os.environ["STUB_LOG"], "a") as log:
    keep = ("BUNDLE_LOCK_SHA256", "APPTAINERENV_PYTHONPATH", "SLURMD_NODENAME", "BUNDLE_DIAG_JOIN_TIMEOUT")
    log.write(json.dumps({{"tool": name, "argv": sys.argv[1:], "env": {{k: os.environ.get(k) for k in keep}}}}) + "\\n")
if name == "scontrol":
    print("gpu01\\ngpu02")
if name == "apptainer" and sys.argv[1] == "build":
    open(sys.argv[2], "w").close()
if name in ("docker", "podman") and sys.argv[1] in ("image", "pull") and os.environ.get("STUB_NO_IMAGE"):  # absent, unpullable
    sys.exit(1)
calls = [json.loads(line) for line in open(os.environ["STUB_LOG"]) if '"srun"' in line]
if name == "srun" and os.environ.get("STUB_FAIL_DIAGNOSTICS") and len(calls) == 1:
    sys.exit(14)
if name == "srun" and not any(arg.startswith("--container-image") for arg in sys.argv):  # one task per node, as srun starts them
    command = sys.argv[1:]
    while command[0].startswith("--"):
        command.pop(0)
    codes = [
        subprocess.run(command, env={{**os.environ, "SLURMD_NODENAME": node, "SLURM_NODEID": str(index)}}).returncode
        for index, node in enumerate(["gpu01", "gpu02"])
    ]
    sys.exit(max(codes))
"""


def run_sbatch(script: Path, folder: Path, **extra: str) -> tuple[subprocess.CompletedProcess, list[dict]]:
    """Run the script with bash as sbatch would on a 2-node allocation, the cluster's commands recording their arguments
    (srun also runs its command once per node; the runtime only records)."""
    stubs = folder / "bin"
    stubs.mkdir(exist_ok=True)
    for name in ("srun", "apptainer", "scontrol", "docker", "podman"):
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


def torchrun_of(step_port: int, nproc: int, timeout: int = 120) -> list[str]:
    rendezvous = ["--rdzv-backend", "c10d", "--rdzv-endpoint", f"gpu01:{step_port}", "--rdzv-id", "4242"]
    return [launch.TORCHRUN, "--nnodes", "2", "--nproc-per-node", str(nproc), *rendezvous, "--rdzv-conf", f"join_timeout={timeout}"]


def test_slurm_script_is_shellcheck_clean_and_runs_diagnostics_then_the_entry(project_of, tmp_path):
    project = project_of("cuda", "B200", 2)
    archive, script, result = slurm_job_of_an_export(project, tmp_path / "my image's.tar")  # a space and a quote: quoting must hold
    text = script.read_text()
    assert text.startswith("#!/bin/bash\n") and "#SBATCH --nodes=2\n" in text and "#SBATCH --gpus-per-node=2\n" in text
    fields, _ = jobfile.split(text)
    assert fields["lock-sha256"] == lock_sha(project) and fields["image"] == str(archive)
    assert fields["runtime"] == "apptainer" and result["runtime"] == "apptainer" and result["join_timeout_s"] == 120

    ran, calls = run_sbatch(script, tmp_path)
    assert ran.returncode == 0, ran.stderr
    sif = f"{tmp_path}/{result['name']}-{lock_sha(project)[:12]}.sif"
    assert [call["tool"] for call in calls] == ["apptainer", "scontrol"] + ["srun", "apptainer", "apptainer"] * 2
    assert calls[0]["argv"] == ["build", sif, f"docker-archive://{archive}"]
    container = ["exec", "--nv", "--pwd", "/opt/bundle/project", "--bind", f"{tmp_path}/runs:/opt/bundle/project/runs", sif]
    diagnostics, entry = calls[3:5], calls[6:8]
    assert [call["env"]["SLURMD_NODENAME"] for call in diagnostics + entry] == ["gpu01", "gpu02"] * 2
    assert all(call["argv"] == container + torchrun_of(29501, 1) + launch.diagnostics_args() for call in diagnostics)
    assert all(
        call["argv"] == container + torchrun_of(29500, 2) + ["-m", "example.pilot", "--config", "config/pilot.json"] for call in entry
    )
    assert entry[0]["env"]["BUNDLE_LOCK_SHA256"] == lock_sha(project) and entry[0]["env"]["APPTAINERENV_PYTHONPATH"] == "src"
    assert diagnostics[0]["env"]["APPTAINERENV_PYTHONPATH"] is None
    assert sorted(path.name for path in (tmp_path / "runs" / ".started-4242").iterdir()) == [
        "diagnostics.gpu01",
        "diagnostics.gpu02",
        "entry.gpu01",
        "entry.gpu02",
    ]


def test_slurm_stops_when_the_diagnostics_fail_or_the_archive_is_not_the_exported_one(project_of, tmp_path):
    project = project_of("cpu", "RTX 4090", 2)
    archive, script, result = slurm_job_of_an_export(project, tmp_path / "example.tar")
    assert "--gpus-per-node" not in script.read_text() and "--nv" not in script.read_text()

    ran, calls = run_sbatch(script, tmp_path, STUB_FAIL_DIAGNOSTICS="1")
    assert ran.returncode == 14
    assert [call["tool"] for call in calls] == ["apptainer", "scontrol", "srun", "scontrol"]  # the entry never started
    assert "node(s) gpu01 gpu02 never started it" in ran.stderr and "join timeout 120 s" in ran.stderr

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
    assert calls[0]["argv"][2] == f"docker://{REGISTRY}@{DIGEST}" and "--rocm" in calls[3]["argv"]

    completed, result = job(project, "slurm", "--image", "images/example.sif", "-o", str(tmp_path / "b.sbatch"))
    assert completed.returncode == 0, completed.stderr
    shell_checks(Path(result["path"]))
    ran, calls = run_sbatch(Path(result["path"]), tmp_path)
    assert ran.returncode == 3  # the stand-in nodes have no images/example.sif: each says so, naming itself
    assert "node gpu01 cannot read the image images/example.sif" in ran.stderr and "node gpu02" in ran.stderr
    assert [call["tool"] for call in calls] == ["scontrol", "srun", "scontrol"]


def test_slurm_pyxis_starts_the_container_with_srun_and_a_bounded_join(project_of, tmp_path):
    project = project_of("cuda", "H100 SXM", 4)
    out = tmp_path / "pyxis.sbatch"
    completed, result = job(project, "slurm", "--runtime", "pyxis", "--nodes", "2", "--join-timeout", "45", "--image", f"{REGISTRY}:1")
    assert completed.returncode == 0, completed.stderr
    Path(result["path"]).rename(out)
    shell_checks(out)
    ran, calls = run_sbatch(out, tmp_path)
    assert ran.returncode == 0, ran.stderr
    diagnostics, entry = (call for call in calls if call["tool"] == "srun")
    image = "registry.example.com:5000#team/example:1"  # enroot's REGISTRY#NAME:TAG
    srun = ["--ntasks-per-node=1", "--kill-on-bad-exit=1", f"--container-image={image}"]
    srun += [f"--container-mounts={tmp_path}/runs:/opt/bundle/project/runs", "--container-workdir=/opt/bundle/project"]
    assert diagnostics["argv"][:6] == entry["argv"][:6] == srun + ["--no-container-mount-home"]
    assert diagnostics["argv"][-len(launch.diagnostics_args()) - 2 :][:2] == ["--rdzv-conf", "join_timeout=45"]
    assert entry["argv"][10:] == ["entry", *torchrun_of(29500, 2, 45), "-m", "example.pilot", "--config", "config/pilot.json"]
    assert diagnostics["env"]["BUNDLE_DIAG_JOIN_TIMEOUT"] == "45"

    ran, calls = run_sbatch(out, tmp_path, BUNDLE_JOIN_TIMEOUT="300")  # the submitter's override
    assert ran.returncode == 0 and "join_timeout=300" in calls[1]["argv"]


@pytest.mark.parametrize(
    ("engine", "backend", "card", "gpu_flags"),
    [
        ("docker", "cuda", "H100 SXM", ["--gpus", '"device=2,3"']),
        ("podman", "cuda", "H100 SXM", ["--device", "nvidia.com/gpu=2", "--device", "nvidia.com/gpu=3"]),
        (
            "docker",
            "rocm",
            "MI300X",
            ["--device", "/dev/kfd", "--device", "/dev/dri", "--group-add", "video", "-e", "ROCR_VISIBLE_DEVICES=2,3"],
        ),
        ("podman", "cpu", "RTX 4090", []),
    ],
)
def test_slurm_docker_and_podman_get_only_the_allocated_cards(project_of, tmp_path, engine, backend, card, gpu_flags):
    project = project_of(backend, card, 4)
    completed, result = job(project, "slurm", "--runtime", engine, "--nodes", "2", "--image", f"{REGISTRY}@{DIGEST}")
    assert completed.returncode == 0, completed.stderr
    script = Path(result["path"])
    shell_checks(script)
    ran, calls = run_sbatch(script, tmp_path, SLURM_STEP_GPUS="2,3", CUDA_VISIBLE_DEVICES="0,1")
    assert ran.returncode == 0, ran.stderr
    runs = [call["argv"] for call in calls if call["tool"] == engine and call["argv"][0] == "run"]
    assert len(runs) == 4  # two steps on two nodes
    user = ["--user", "0:0"] if engine == "podman" else ["--user", f"{os.getuid()}:{os.getgid()}"]
    head = ["run", "--rm", "--init", "--name", "bundle-4242-diagnostics-0", "--network", "host", "--ipc", "host", *user]
    head += ["-w", "/opt/bundle/project", "-v", f"{tmp_path}/runs:/opt/bundle/project/runs"]
    head += ["-e", "BUNDLE_LOCK_SHA256", "-e", "BUNDLE_DIAG_JOIN_TIMEOUT", "-e", "PYTHONPATH", *gpu_flags, f"{REGISTRY}@{DIGEST}"]
    assert runs[0][: len(head)] == head and runs[0][len(head)] == launch.TORCHRUN
    assert runs[3][4] == "bundle-4242-entry-1"

    if backend != "cpu":
        ran, _ = run_sbatch(script, tmp_path, SLURM_STEP_GPUS="", CUDA_VISIBLE_DEVICES="")
        assert ran.returncode == 3 and "node gpu01: Slurm allocated no GPU to this step" in ran.stderr
    ran, calls = run_sbatch(script, tmp_path, SLURM_STEP_GPUS="0", STUB_NO_IMAGE="1")
    assert ran.returncode == 3 and f"node gpu02 has no image {REGISTRY}@{DIGEST}" in ran.stderr
    pulls = [call["argv"] for call in calls if call["argv"][:1] == ["pull"]]
    assert pulls == [["pull", "-q", f"{REGISTRY}@{DIGEST}"]] * 2  # a registry's reference is pulled once per node before giving up


@pytest.mark.parametrize("adapters", [False, True])
def test_docker_and_podman_steps_pass_the_nodes_rdma_adapters_only_when_it_has_them(adapters):
    """A private /dev (a mount namespace as root) with and without an infiniband folder: the flags NCCL's verbs need."""
    from bundler.jobs.slurm_runtimes import RDMA_LINE

    make = "mkdir /dev/infiniband; " if adapters else ""
    shown = f"mount -t tmpfs none /dev; {make}{RDMA_LINE}; printf '%s\\n' \"${{rdma[@]}}\""
    ran = subprocess.run(["unshare", "--mount", "bash", "-c", shown], capture_output=True, text=True)
    assert ran.returncode == 0, ran.stderr
    flags = ["--device", "/dev/infiniband", "--ulimit", "memlock=-1:-1", "--cap-add", "IPC_LOCK"]
    assert ran.stdout.split() == (flags if adapters else [])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--runtime", "singularity"), "--runtime 'singularity' is not a container runtime"),
        (("--runtime", "docker", "--image", "example.tar"), "--runtime docker runs an image by reference"),
        (("--join-timeout", "0"), "--join-timeout '0' is not a number of seconds"),
        (("--join-timeout", "1e3"), "--join-timeout '1e3' is not a number of seconds"),
    ],
)
def test_slurm_refuses_an_unknown_runtime_or_timeout(project_of, args, message):
    project = project_of("cpu", "RTX 4090", 1)
    completed, _ = job(project, "slurm", *args)
    assert completed.returncode == 2 and message in completed.stderr and "Traceback" not in completed.stderr
    assert not (project / "job-slurm.sbatch").exists()


def test_the_other_engines_refuse_the_slurm_options(project_of):
    project = project_of("cpu", "RTX 4090", 1)
    completed, _ = job(project, "k8s", "--runtime", "docker", "--image", f"{REGISTRY}:1")
    assert completed.returncode == 2 and "--runtime is an option of `bundler job slurm` only" in completed.stderr


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
