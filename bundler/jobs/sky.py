"""`bundler job sky`: a SkyPilot task.

The image is the cluster's runtime (``resources.image_id: docker:REF``, by digest when
known) and the accelerators come from the order (card, GPUs per node). ``setup`` runs the
diagnostics on every node through torchrun with SkyPilot's setup variables
(SKYPILOT_SETUP_NODE_RANK, SKYPILOT_SETUP_NODE_IPS): a failing node fails the launch
before ``run`` starts the entry with SKYPILOT_NODE_RANK, SKYPILOT_NODE_IPS,
SKYPILOT_NUM_NODES and SKYPILOT_NUM_GPUS_PER_NODE.

``--infra`` becomes ``resources.infra`` (aws, k8s/CONTEXT, slurm/CLUSTER, …). On Slurm, a
cluster without the Pyxis plugin refuses ``image_id: docker:``, so ``--infra slurm[/…]``
writes the in-run route instead: no image ID, ``setup`` pulls the image on every node with
the runtime ``BUNDLE_RUNTIME`` names (apptainer, the default, docker or podman) and runs the
diagnostics in it, ``run`` runs the entry in it. Registry credentials are never values in
the file: for the docker route the note names SkyPilot's SKYPILOT_DOCKER_* to pass with
``sky launch --secret`` (SkyPilot takes all three or none, so a file holding them would force
a login on a public image); the in-run route reads BUNDLE_REGISTRY_USERNAME/PASSWORD, secrets
left empty in the file unless given at launch.
"""

from __future__ import annotations

import re
import shlex

from bundler.contracts.reference import registry_host
from bundler.errors import UsageError
from bundler.image import layout
from bundler.jobs import launch
from bundler.jobs.jobfile import yaml_text
from bundler.jobs.launch import Token, Var
from bundler.jobs.slurm_runtimes import RDMA_LINE

# SkyPilot's names (`sky show-gpus`) for the cards of the price catalog.
SKY_NAMES = {
    "RTX 4090": "RTX4090",
    "L40S": "L40S",
    "A100 80GB SXM": "A100-80GB",
    "H100 SXM": "H100",
    "H200": "H200",
    "B200": "B200",
    "MI300X": "MI300X",
}


def first_ip(variable: str) -> str:
    """The shell line that sets MASTER_ADDR to the first line of SkyPilot's node IPs (node 0's), without a pipe."""
    return f"MASTER_ADDR=\"${{{variable}%%$'\\n'*}}\""


def accelerator(inputs) -> str:
    """SkyPilot's name of the card; a card it does not know is named without spaces, with a note."""
    name = SKY_NAMES.get(inputs.card)
    if name is None:
        name = inputs.card.replace(" ", "")
        inputs.notes.append(f"SkyPilot's name for {inputs.card!r} is taken to be {name!r}: check it with `sky show-gpus {name}`.")
    return name


INFRA_RE = re.compile(r"[A-Za-z0-9*][A-Za-z0-9_.:@*/-]*", re.ASCII)  # cloud[/region[/zone]], k8s/CONTEXT, slurm/CLUSTER
DOCKER_LOGIN = ("SKYPILOT_DOCKER_USERNAME", "SKYPILOT_DOCKER_PASSWORD", "SKYPILOT_DOCKER_SERVER")
REGISTRY_LOGIN = ("BUNDLE_REGISTRY_USERNAME", "BUNDLE_REGISTRY_PASSWORD")  # read by the in-run route's setup
RUNTIMES = ("apptainer", "docker", "podman")


def check_infra(text: str | None) -> str:
    """--infra as SkyPilot's ``resources.infra`` ("" when not given); UsageError for a value that is not one."""
    if text is None:
        return ""
    if not INFRA_RE.fullmatch(text):
        raise UsageError(
            f"--infra {text!r} is not a SkyPilot infra.",
            hint="Write it as SkyPilot does: a cloud (aws, gcp, …) with an optional /region[/zone], k8s[/CONTEXT] or slurm[/CLUSTER].",
            value=text,
        )
    return text


def in_run(infra: str) -> bool:
    """Whether the task runs the image itself: on Slurm, which refuses `image_id: docker:` without Pyxis."""
    return infra.split("/", 1)[0].lower() == "slurm"


def render(inputs, infra: str = "") -> str:
    resources: dict = {} if in_run(infra) else {"image_id": f"docker:{inputs.image.pinned}"}
    if infra:
        resources["infra"] = infra
    if inputs.gpus_per_node:
        resources["accelerators"] = {accelerator(inputs): inputs.gpus_per_node}
    entry = launch.entry(inputs.bundle)
    diagnostics = launch.static_rendezvous(
        str(inputs.nodes), "1", Var("SKYPILOT_SETUP_NODE_RANK"), Var("MASTER_ADDR"), launch.DIAGNOSTICS_PORT
    )
    nproc = Var("SKYPILOT_NUM_GPUS_PER_NODE") if inputs.gpus_per_node else "1"
    job = launch.static_rendezvous(Var("SKYPILOT_NUM_NODES"), nproc, Var("SKYPILOT_NODE_RANK"), Var("MASTER_ADDR"), launch.ENTRY_PORT)
    envs = {"BUNDLE_LOCK_SHA256": inputs.lock_sha256, "BUNDLE_IMAGE": inputs.image.given}
    task: dict = {"name": inputs.name, "num_nodes": inputs.nodes, "resources": resources, "envs": envs}
    host = registry_host(inputs.image.pinned)
    if in_run(infra):
        envs["BUNDLE_RUNTIME"] = "apptainer"
        task["secrets"] = dict.fromkeys(REGISTRY_LOGIN, "")  # empty: no login; `sky launch --secret NAME` fills them in
        inputs.notes.append(
            f"on {infra} the task pulls and runs the image itself with BUNDLE_RUNTIME (apptainer; `--env BUNDLE_RUNTIME=docker` "
            "or podman at launch)" + (f"; for a private registry add `{_secret_flags(REGISTRY_LOGIN)}` to `sky launch`." if host else ".")
        )
        prelude = _in_run_prelude(inputs)
        task["setup"] = _host_script(
            *prelude, *_pull(inputs), first_ip("SKYPILOT_SETUP_NODE_IPS"), _in_image(diagnostics + launch.diagnostics_args())
        )
        inside = ["env", *(f"{name}={value}" for name, value in entry.env)] if entry.env else []
        task["run"] = _host_script(*prelude, first_ip("SKYPILOT_NODE_IPS"), _in_image(inside + job + list(entry.args)))
    else:
        if host:  # SkyPilot takes the three together or none: a file holding them would force a login on a public image
            inputs.notes.append(
                f"if {host} needs a login, add `{_secret_flags(DOCKER_LOGIN[:2])} --secret SKYPILOT_DOCKER_SERVER={host}` to "
                "`sky launch`, with the user name and password in those variables of your environment."
            )
        task["setup"] = _script(first_ip("SKYPILOT_SETUP_NODE_IPS"), launch.shell(diagnostics + launch.diagnostics_args()))
        task["run"] = _script(first_ip("SKYPILOT_NODE_IPS"), *launch.exports(entry.env), "exec " + launch.shell(job + list(entry.args)))
    return yaml_text(task)


def _secret_flags(names: tuple[str, ...]) -> str:
    """`sky launch` flags that take each variable's value from the launching shell's environment."""
    return " ".join(f"--secret {name}" for name in names)


def _script(*lines: str) -> str:
    return "\n".join(["set -euo pipefail", launch.shell(["cd", layout.PROJECT]), *lines]) + "\n"


def _host_script(*lines: str) -> str:
    return "\n".join(["set -euo pipefail", *lines]) + "\n"


def _in_image(tokens: list[Token]) -> str:
    return "in_image " + launch.shell(tokens)


GPU_FLAGS = {  # the node's cards for each runtime: Apptainer's flag, Docker's and Podman's devices
    "cuda": {
        "apptainer": "--nv",
        "docker": 'gpus=(--gpus all); if [ -n "${CUDA_VISIBLE_DEVICES:-}" ]; then gpus=(--gpus "\\"device=$CUDA_VISIBLE_DEVICES\\""); fi',
        "podman": 'gpus=(); ids="${CUDA_VISIBLE_DEVICES:-all}"; for gpu in ${ids//,/ }; do gpus+=(--device "nvidia.com/gpu=$gpu"); done',
    },
    "rocm": {
        "apptainer": "--rocm",
        "docker": "gpus=(--device /dev/kfd --device /dev/dri --group-add video)",
        "podman": "gpus=(--device /dev/kfd --device /dev/dri --group-add keep-groups)",
    },
}


def _in_run_prelude(inputs) -> list[str]:
    """The lines both scripts start with on the host: the runtime checked, the image, runs/, and ``in_image``."""
    project, backend = layout.PROJECT, inputs.backend
    flags = GPU_FLAGS.get(backend, {})
    apptainer = " ".join(
        ["apptainer exec", *([flags["apptainer"]] if flags else []), f'--pwd {project} --bind "$RUNS:{project}/runs" "$SIF" "$@"']
    )
    engine = " ".join(
        [
            '"$RUNTIME" run --rm --init --network host --ipc host "${user[@]}" "${gpus[@]}" "${rdma[@]}"',
            f'-w {project} -v "$RUNS:{project}/runs" --entrypoint "$1" "$IMAGE" "${{@:2}}"',
        ]
    )
    gpu_lines = {runtime: flags.get(runtime, "gpus=()") for runtime in ("docker", "podman")}
    sif = f"{inputs.name}-{inputs.lock_sha256[:12]}.sif"
    return [
        'RUNTIME="${BUNDLE_RUNTIME:-apptainer}"',
        f'case "$RUNTIME" in {"|".join(RUNTIMES)}) ;; '
        f'*) echo "bundler job: BUNDLE_RUNTIME=$RUNTIME is not {", ".join(RUNTIMES[:-1])} or {RUNTIMES[-1]}" >&2; exit 2;; esac',
        f"IMAGE={shlex.quote(inputs.image.pinned)}",
        f'SIF="${{BUNDLE_SIF:-$HOME/.cache/bundler/{sif}}}"',
        'RUNS="${BUNDLE_RUNS:-$PWD/runs}"',
        'mkdir -p "$RUNS"',
        "in_image() {",
        f'  if [ "$RUNTIME" = apptainer ]; then {apptainer}; return; fi',
        '  user=(--user "$(id -u):$(id -g)")',
        '  if [ "$RUNTIME" = podman ] && [ "$(id -u)" != 0 ]; then user=(--userns=keep-id); fi',
        f'  if [ "$RUNTIME" = docker ]; then {gpu_lines["docker"]}; else {gpu_lines["podman"]}; fi',
        f"  {RDMA_LINE}",
        f"  {engine}",
        "}",
    ]


def _pull(inputs) -> list[str]:
    """setup's lines that bring the image to the node, logging in when BUNDLE_REGISTRY_USERNAME is given."""
    server = registry_host(inputs.image.pinned) or "docker.io"
    login = (
        'printf \'%s\' "$BUNDLE_REGISTRY_PASSWORD" | "$RUNTIME" login --username "$BUNDLE_REGISTRY_USERNAME" '
        f"--password-stdin {shlex.quote(server)}"
    )
    return [
        'if [ "$RUNTIME" = apptainer ]; then',
        '  if [ -n "${BUNDLE_REGISTRY_USERNAME:-}" ]; then',
        '    export APPTAINER_DOCKER_USERNAME="$BUNDLE_REGISTRY_USERNAME" APPTAINER_DOCKER_PASSWORD="${BUNDLE_REGISTRY_PASSWORD:-}"',
        "  fi",
        '  mkdir -p "$(dirname "$SIF")"',
        '  if [ ! -f "$SIF" ]; then apptainer pull "$SIF.$$.part" "docker://$IMAGE" && mv -f "$SIF.$$.part" "$SIF"; fi',
        "else",
        f'  if [ -n "${{BUNDLE_REGISTRY_USERNAME:-}}" ]; then {login}; fi',
        '  "$RUNTIME" pull "$IMAGE"',
        "fi",
    ]
