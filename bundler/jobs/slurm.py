"""`bundler job slurm`: an sbatch script that runs the image through a container runtime
(Apptainer, Docker, Podman or Pyxis; slurm_runtimes.py says how each runs one step).

One shape for every runtime: ``srun`` starts one task per node, and each task runs the
script's ``node_step`` function, which checks that the node has the image (bounded; the node
and the reference are named when it does not), records that the node started the step, and
runs the step in the container with runs/ bound from the submit folder. The steps are torchrun
with a c10d rendezvous at the first host of ``scontrol show hostnames`` and a bounded join
(``--rdzv-conf join_timeout=…``, BUNDLE_JOIN_TIMEOUT at submit time overrides the written
default): first the diagnostics (one process per node; a failure ends the job, naming the nodes
that never started the step), then the entry. The job's exit status is the failing step's, else
the entry's. Every value from the project or the command line is shell-quoted; the script
passes ``bash -n`` and shellcheck.
"""

from __future__ import annotations

import shlex

from bundler.image import layout
from bundler.jobs import launch, slurm_runtimes
from bundler.jobs.launch import Var

SHEBANG = "#!/bin/bash"
DEFAULT_JOIN_TIMEOUT = 120
_STEP_FAILED = r"""step_failed() {
  local step=$1 code=$2 host why
  local missing=()
  for why in "$STARTED/$step".*.why; do
    [ -e "$why" ] && echo "bundler job: what a node said: $(cat "$why")" >&2
  done
  while read -r host; do
    [ -e "$STARTED/$step.$host" ] || missing+=("$host")
  done < <(scontrol show hostnames "$SLURM_JOB_NODELIST")
  if [ ${#missing[@]} -gt 0 ]; then
    echo "bundler job: the $step step failed (exit $code): node(s) ${missing[*]} never started it," \
      "so the others stopped waiting for them to join (join timeout $BUNDLE_DIAG_JOIN_TIMEOUT s)." >&2
  else
    echo "bundler job: the $step step failed (exit $code) on a node that started it;" \
      "its output is above, the diagnostics' report under $RUNS." >&2
  fi
  exit "$code"
}"""


def render(inputs) -> str:
    runtime = inputs.runtime
    directives = [f"--job-name={inputs.name}", f"--nodes={inputs.nodes}", "--ntasks-per-node=1", "--output=%x-%j.out"]
    if inputs.gpus_per_node:
        directives.insert(3, f"--gpus-per-node={inputs.gpus_per_node}")
    entry = launch.entry(inputs.bundle)
    rendezvous = ("--rdzv-conf", Var("RDZV_CONF"))
    diagnostics = launch.c10d_rendezvous(Var("SLURM_NNODES"), "1", Var("DIAGNOSTICS_ENDPOINT"), Var("SLURM_JOB_ID"))
    job = launch.c10d_rendezvous(Var("SLURM_NNODES"), str(inputs.processes_per_node), Var("ENTRY_ENDPOINT"), Var("SLURM_JOB_ID"))
    env_names = ["BUNDLE_LOCK_SHA256", "BUNDLE_DIAG_JOIN_TIMEOUT", *(name for name, _ in entry.env)]
    lines = [f"#SBATCH {directive}" for directive in directives]
    lines += [
        "set -euo pipefail",
        "",
        f"# What runs: the lock and the image recorded in the header above, through {runtime}.",
        f"export BUNDLE_LOCK_SHA256={shlex.quote(inputs.lock_sha256)}",
        *(_sif_lines(inputs) if runtime == "apptainer" else slurm_runtimes.image_lines(runtime, inputs.image)),
        "# How long the nodes wait for each other at each step's rendezvous (seconds).",
        f'export BUNDLE_DIAG_JOIN_TIMEOUT="${{BUNDLE_JOIN_TIMEOUT:-{inputs.join_timeout}}}"',
        'RDZV_CONF="join_timeout=$BUNDLE_DIAG_JOIN_TIMEOUT"',
        'export RUNS="${BUNDLE_RUNS:-${SLURM_SUBMIT_DIR:-.}/runs}"',
        'export STARTED="$RUNS/.started-${SLURM_JOB_ID}"',
        'mkdir -p "$RUNS" "$STARTED"',
        'MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | sed -n 1p)',  # sed reads all: no SIGPIPE under pipefail
        f'DIAGNOSTICS_ENDPOINT="$MASTER_ADDR:{launch.DIAGNOSTICS_PORT}"',
        f'ENTRY_ENDPOINT="$MASTER_ADDR:{launch.ENTRY_PORT}"',
        "",
        "# One step on one node (srun runs it once per node): check the image, say the node started, run the container.",
        "node_step() {",
        '  local step=$1 node="${SLURMD_NODENAME:-$(hostname)}"',
        "  shift",
        *(f"  {line}" for line in slurm_runtimes.node_step_body(runtime, inputs.backend, env_names)),
        "}",
        _STEP_FAILED,
        "STEP=(" + _srun(runtime) + ' bash -c "$(declare -f node_step); node_step \\"\\$@\\"" node_step)',
        "",
        "# 1. The diagnostics on every node, one process each; stage 10 all-reduces across the nodes. A failure ends the job here.",
        launch.shell([Var("STEP[@]"), "diagnostics", *diagnostics, *rendezvous, *launch.diagnostics_args()])
        + " || step_failed diagnostics $?",
        "",
        "# 2. The project's entry, one process per card.",
        *_entry_exports(runtime, entry.env),
        launch.shell([Var("STEP[@]"), "entry", *job, *rendezvous, *entry.args]) + " || step_failed entry $?",
    ]
    return "\n".join(lines) + "\n"


def _srun(runtime: str) -> str:
    srun = "srun --ntasks-per-node=1 --kill-on-bad-exit=1"
    if runtime == "pyxis":  # the container starts with the task: node_step runs inside it
        mounts = shlex.quote(f"{layout.PROJECT}/runs")
        srun += f' --container-image="$IMAGE" --container-mounts="$RUNS":{mounts}'
        srun += f" --container-workdir={layout.PROJECT} --no-container-mount-home"
    return srun


def _entry_exports(runtime: str, env: tuple[tuple[str, str], ...]) -> list[str]:
    lines = launch.exports(env)
    if runtime == "apptainer":
        lines = [f"export APPTAINERENV_{line.removeprefix('export ')}" for line in lines]
    return lines


def _sif_lines(inputs) -> list[str]:
    image = inputs.image
    if image.archive.lower().endswith(".sif"):
        return [f"export SIF={shlex.quote(image.archive)}"]
    source = f"docker-archive://{image.archive}" if image.archive else f"docker://{image.pinned}"
    lines = [f"IMAGE_SOURCE={shlex.quote(source)}"]
    if image.archive_sha256:
        check = f"{image.archive_sha256}  {image.archive}"
        lines.append(f"printf '%s\\n' {shlex.quote(check)} | sha256sum -c --quiet -")
    sif = f"{inputs.name}-{inputs.lock_sha256[:12]}.sif"
    lines += [
        f'export SIF="${{BUNDLE_SIF:-${{SLURM_SUBMIT_DIR:-.}}/{sif}}}"',
        '[ -f "$SIF" ] || apptainer build "$SIF" "$IMAGE_SOURCE"',
    ]
    return lines
