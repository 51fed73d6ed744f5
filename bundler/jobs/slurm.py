"""`bundler job slurm`: an sbatch script that runs the image through Apptainer.

The image (a `bundler build --export` archive, a registry reference or a .sif) becomes one
.sif file, built once beside the script; every step runs in it with the node's cards
(``--nv`` / ``--rocm``) and a writable runs/ bound from the submit folder. ``srun`` starts
one torchrun per node, which meet at the first host of the node list (c10d rendezvous,
``SLURM_NNODES``, ``SLURM_JOB_ID``): first the diagnostics (a failing node ends the job,
``set -e``), then the entry. Every value from the project or the command line is
shell-quoted; the script passes ``bash -n`` and shellcheck.
"""

from __future__ import annotations

import shlex

from bundler.image import layout
from bundler.jobs import launch
from bundler.jobs.launch import Var

GPU_FLAGS = {"cuda": ["--nv"], "rocm": ["--rocm"], "cpu": []}
SHEBANG = "#!/bin/bash"


def render(inputs) -> str:
    name = inputs.name
    directives = [f"--job-name={name}", f"--nodes={inputs.nodes}", "--ntasks-per-node=1", "--output=%x-%j.out"]
    if inputs.gpus_per_node:
        directives.insert(3, f"--gpus-per-node={inputs.gpus_per_node}")
    entry = launch.entry(inputs.bundle)
    container: list[launch.Token] = ["srun", "--ntasks-per-node=1", "--kill-on-bad-exit=1", Var("APPTAINER[@]")]
    diagnostics = launch.c10d_rendezvous(Var("SLURM_NNODES"), "1", Var("DIAGNOSTICS_ENDPOINT"), Var("SLURM_JOB_ID"))
    job = launch.c10d_rendezvous(Var("SLURM_NNODES"), str(inputs.processes_per_node), Var("ENTRY_ENDPOINT"), Var("SLURM_JOB_ID"))
    lines = [f"#SBATCH {directive}" for directive in directives]
    lines += [
        "set -euo pipefail",
        "",
        "# What runs: the lock and the image recorded in the header above.",
        f"export BUNDLE_LOCK_SHA256={shlex.quote(inputs.lock_sha256)}",
        *_image_lines(inputs),
        'RUNS="${BUNDLE_RUNS:-${SLURM_SUBMIT_DIR:-.}/runs}"',
        'mkdir -p "$RUNS"',
        'MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | sed -n 1p)',  # sed reads all: no SIGPIPE under pipefail
        f'DIAGNOSTICS_ENDPOINT="$MASTER_ADDR:{launch.DIAGNOSTICS_PORT}"',
        f'ENTRY_ENDPOINT="$MASTER_ADDR:{launch.ENTRY_PORT}"',
        "APPTAINER=("
        + launch.shell(["apptainer", "exec", *GPU_FLAGS[inputs.backend], "--pwd", layout.PROJECT, "--bind"])
        + f' "$RUNS:{layout.PROJECT}/runs" "$SIF")',
        "",
        "# 1. The diagnostics on every node, one process each; stage 10 all-reduces across the nodes. A failure ends the job here.",
        launch.shell(container + diagnostics + launch.diagnostics_args()),
        "",
        "# 2. The project's entry, one process per card.",
        *(f"export APPTAINERENV_{line.removeprefix('export ')}" for line in launch.exports(entry.env)),
        launch.shell(container + job + list(entry.args)),
    ]
    return "\n".join(lines) + "\n"


def _image_lines(inputs) -> list[str]:
    image = inputs.image
    if image.archive.lower().endswith(".sif"):
        return [f"SIF={shlex.quote(image.archive)}"]
    source = f"docker-archive://{image.archive}" if image.archive else f"docker://{image.pinned}"
    lines = [f"IMAGE_SOURCE={shlex.quote(source)}"]
    if image.archive_sha256:
        check = f"{image.archive_sha256}  {image.archive}"
        lines.append(f"printf '%s\\n' {shlex.quote(check)} | sha256sum -c --quiet -")
    sif = f"{inputs.name}-{inputs.lock_sha256[:12]}.sif"
    lines += [
        f'SIF="${{BUNDLE_SIF:-${{SLURM_SUBMIT_DIR:-.}}/{sif}}}"',
        '[ -f "$SIF" ] || apptainer build "$SIF" "$IMAGE_SOURCE"',
    ]
    return lines
