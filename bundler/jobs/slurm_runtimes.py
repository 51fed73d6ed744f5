"""How each container runtime runs one step on one Slurm node: the image check, the GPU flags and
the container command line, as the body of the script's ``node_step`` shell function.

Every runtime gets the same contract from the script: ``$IMAGE`` (or ``$SIF``), ``$RUNS`` (the
submit folder's runs/), ``$STARTED`` (where a node says it started a step), ``$node`` and
``$step``, and the step's command as ``"$@"``. Docker and Podman run outside the job's cgroup,
so they are given only the cards Slurm allocated to the step (SLURM_STEP_GPUS, else
CUDA_VISIBLE_DEVICES), the job's variables explicitly (``-e NAME``), the host network (the
rendezvous is at the first node's address) and the submitting user as the container's user (it
owns runs/). Their container is named after the job and removed by a trap when the step is
cancelled. Pyxis (``srun --container-image``) and Apptainer run inside the job's allocation.
"""

from __future__ import annotations

import shlex

from bundler.contracts.reference import registry_host
from bundler.errors import UsageError
from bundler.image import layout
from bundler.jobs.reference import Image

APPTAINER_GPU_FLAGS = {"cuda": ["--nv"], "rocm": ["--rocm"], "cpu": []}
RUNTIMES = ("apptainer", "docker", "podman", "pyxis")
DEFAULT_RUNTIME = "apptainer"
CHECK_SECONDS = 60  # an image check (or a node's engine) that takes longer is a failed node

# A node's reason also goes to the shared runs folder: srun may drop a task's last words when it ends the step
_SAY = 'echo "$why" >&2; echo "$why" > "$STARTED/$step.$node.why" 2>/dev/null || true; return 3'
_MISSING = 'why="bundler job: node $node has no image $IMAGE: {how}"; ' + _SAY
_NO_GPU = (
    'why="bundler job: node $node: Slurm allocated no GPU to this step (SLURM_STEP_GPUS and CUDA_VISIBLE_DEVICES are empty); '
    'ask for cards with --gpus-per-node"; ' + _SAY
)
# RDMA adapters the node has reach the container (NCCL falls back to sockets otherwise), with the
# locked memory their queues pin
RDMA_LINE = "rdma=(); if [ -d /dev/infiniband ]; then rdma=(--device /dev/infiniband --ulimit memlock=-1:-1 --cap-add IPC_LOCK); fi"
_GPU_LIST = [
    'gpus="${SLURM_STEP_GPUS:-${CUDA_VISIBLE_DEVICES:-}}"',
    f'[ -n "$gpus" ] || {{ {_NO_GPU}; }}',
]


def check_runtime(runtime: str, image: Image) -> str:
    """``runtime`` when it is one bundler writes and it can run ``image``; UsageError naming it otherwise."""
    if runtime not in RUNTIMES:
        raise UsageError(
            f"--runtime {runtime!r} is not a container runtime bundler writes Slurm jobs for.",
            hint=f"Use one of: {', '.join(RUNTIMES)} (default {DEFAULT_RUNTIME}).",
            value=runtime,
        )
    if image.archive and runtime != "apptainer":
        raise UsageError(
            f"--image {image.archive!r} is a file: --runtime {runtime} runs an image by reference.",
            hint="Load or push the image (`bundler build --push REGISTRY/NAME:TAG`) and pass --image REGISTRY/NAME:TAG; "
            "only --runtime apptainer takes a .tar or .sif file.",
            value=image.archive,
        )
    return runtime


def image_lines(runtime: str, image: Image) -> list[str]:
    """The script's lines that name the image for ``runtime`` (Apptainer's .sif lines are slurm.py's)."""
    if runtime == "pyxis":
        return [f"export IMAGE={shlex.quote(pyxis_reference(image))}"]
    pull = 1 if registry_host(image.pinned) else 0  # a name of no registry is a local tag: never pulled
    return [f"export IMAGE={shlex.quote(image.pinned)}", f"export PULL={pull}"]


def pyxis_reference(image: Image) -> str:
    """enroot's spelling of a reference: the registry host and the path split by '#'."""
    reference = image.pinned
    host = registry_host(reference)
    return f"{host}#{reference[len(host) + 1 :]}" if host else reference


def node_step_body(runtime: str, backend: str, env_names: list[str]) -> list[str]:
    """The lines of ``node_step`` after ``$node`` and ``$step`` are set (indented by the caller)."""
    if runtime == "pyxis":
        return ['mark="' + layout.PROJECT + '/runs/${STARTED##*/}"', 'mkdir -p "$mark"', ': > "$mark/$step.$node"', 'exec "$@"']
    if runtime == "apptainer":
        return [
            '[ -f "$SIF" ] || { echo "bundler job: node $node cannot read the image $SIF (is the submit folder shared?)" >&2; return 3; }',
            ': > "$STARTED/$step.$node"',
            " ".join(
                [
                    "apptainer exec",
                    *APPTAINER_GPU_FLAGS[backend],
                    f'--pwd {layout.PROJECT} --bind "$RUNS:{layout.PROJECT}/runs" "$SIF" "$@" &',
                ]
            ),
            'wait "$!"',
        ]
    return _engine_body(runtime, backend, env_names)


def _engine_body(engine: str, backend: str, env_names: list[str]) -> list[str]:
    how = f"pull it there ({engine} pull $IMAGE) or load it ({engine} load -i FILE.tar)"  # no backquotes: the message is in "…"
    exists = f'timeout {CHECK_SECONDS} {engine} image inspect "$IMAGE" >/dev/null 2>&1'
    pull = f'{{ [ "$PULL" = 1 ] && timeout "${{BUNDLE_PULL_TIMEOUT:-900}}" {engine} pull -q "$IMAGE" >&2; }}'
    lines = [f"if ! {exists} && ! {pull}; then {_MISSING.format(how=how)}; fi"]
    lines += [*_gpu_lines(engine, backend), RDMA_LINE]
    user = ['--user "$(id -u):$(id -g)"']
    if engine == "podman":  # rootless Podman maps the submitting user onto itself; as root, --user is enough
        lines.append('if [ "$(id -u)" = 0 ]; then users=(--user 0:0); else users=(--userns=keep-id --user "$(id -u):$(id -g)"); fi')
        user = ['"${users[@]}"']
    flags = ["--rm", "--init", '--name "$CONTAINER"', "--network host", "--ipc host", *user, f"-w {layout.PROJECT}"]
    flags += [f'-v "$RUNS:{layout.PROJECT}/runs"', *(f"-e {name}" for name in env_names), '"${gpu_flags[@]}"', '"${rdma[@]}"']
    lines += [
        'CONTAINER="bundle-${SLURM_JOB_ID}-$step-${SLURM_NODEID:-0}"',
        f"trap '{engine} rm -f \"$CONTAINER\" >/dev/null 2>&1 || true' EXIT",
        "trap 'exit 143' TERM INT",
        ': > "$STARTED/$step.$node"',
        f'{engine} run {" ".join(flags)} "$IMAGE" "$@" &',
        'wait "$!"',
    ]
    return lines


def _gpu_lines(engine: str, backend: str) -> list[str]:
    if backend == "cpu":
        return ["gpu_flags=()"]
    if backend == "rocm":  # the cards' device files; ROCR_VISIBLE_DEVICES narrows them to the allocated ones
        return [*_GPU_LIST, 'gpu_flags=(--device /dev/kfd --device /dev/dri --group-add video -e "ROCR_VISIBLE_DEVICES=$gpus")']
    if engine == "podman":  # CDI names, one per card
        return [*_GPU_LIST, "gpu_flags=()", 'for gpu in ${gpus//,/ }; do gpu_flags+=(--device "nvidia.com/gpu=$gpu"); done']
    return [*_GPU_LIST, 'gpu_flags=(--gpus "\\"device=$gpus\\"")']
