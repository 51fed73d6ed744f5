"""`bundler job k8s`: a headless Service and an Indexed Job, one pod per node.

Each pod holds the node's cards (``nvidia.com/gpu`` or ``amd.com/gpu`` limits), mounts a
memory-backed ``emptyDir`` at /dev/shm (NCCL and DataLoader workers), runs as the
image's non-root user, pulls the image by digest when known, runs the diagnostics in an
init container and then the entry, both through torchrun: the node rank is the pod's
completion index, node 0 is reached through the headless Service (``<name>-0.<name>``,
published before the pods are ready so that the init containers can meet).
"""

from __future__ import annotations

from bundler.image import layout
from bundler.jobs import launch
from bundler.jobs.jobfile import yaml_text
from bundler.jobs.launch import Var

ANNOTATION = "bundler.io"
COMPLETION_INDEX = "metadata.annotations['batch.kubernetes.io/job-completion-index']"
SHM = "dshm"


def render(inputs) -> str:
    name = inputs.name
    labels = {"app.kubernetes.io/name": name, "app.kubernetes.io/managed-by": "bundler", f"{ANNOTATION}/job": name}
    annotations = {f"{ANNOTATION}/{key}": str(value) for key, value in inputs.record().items()}
    metadata = {"name": name, "labels": labels, "annotations": annotations}
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": metadata,
        "spec": {
            "clusterIP": "None",
            "publishNotReadyAddresses": True,
            "selector": {f"{ANNOTATION}/job": name},
            "ports": [
                {"name": "torchrun", "port": launch.ENTRY_PORT, "protocol": "TCP"},
                {"name": "diagnostics", "port": launch.DIAGNOSTICS_PORT, "protocol": "TCP"},
            ],
        },
    }
    entry = launch.entry(inputs.bundle)
    master = f"{name}-0.{name}"
    nodes = str(inputs.nodes)
    diagnostics = launch.static_rendezvous(nodes, "1", Var("NODE_RANK"), master, launch.DIAGNOSTICS_PORT) + launch.diagnostics_args()
    job_command = launch.static_rendezvous(nodes, str(inputs.processes_per_node), Var("NODE_RANK"), master, launch.ENTRY_PORT)
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": metadata,
        "spec": {
            "completionMode": "Indexed",
            "completions": inputs.nodes,
            "parallelism": inputs.nodes,
            "backoffLimit": 0,
            "template": {
                "metadata": {"labels": labels, "annotations": annotations},
                "spec": {
                    "subdomain": name,
                    "restartPolicy": "Never",
                    "securityContext": {
                        "runAsNonRoot": True,
                        "runAsUser": layout.UID,
                        "runAsGroup": layout.UID,
                        "seccompProfile": {"type": "RuntimeDefault"},
                    },
                    "volumes": [{"name": SHM, "emptyDir": {"medium": "Memory"}}],
                    "initContainers": [_container("diagnostics", inputs, diagnostics, ())],
                    "containers": [_container("entry", inputs, job_command + list(entry.args), entry.env)],
                },
            },
        },
    }
    return yaml_text(service, job)


def _container(name: str, inputs, command: list, env: tuple) -> dict:
    container = {
        "name": name,
        "image": inputs.image.pinned,
        "imagePullPolicy": "IfNotPresent",
        "workingDir": layout.PROJECT,
        "command": [_argument(token) for token in command],
        "env": [{"name": "NODE_RANK", "valueFrom": {"fieldRef": {"fieldPath": COMPLETION_INDEX}}}]
        + [{"name": key, "value": _literal(value)} for key, value in env],
        "volumeMounts": [{"name": SHM, "mountPath": "/dev/shm"}],
        "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
    }
    if inputs.gpus_per_node:
        container["resources"] = {"limits": {inputs.gpu_resource: inputs.gpus_per_node}}
    return container


def _argument(token) -> str:
    return f"$({token.name})" if isinstance(token, Var) else _literal(token)


def _literal(text: str) -> str:
    """Kubernetes expands $(NAME) in commands and env values; $$ keeps a literal $."""
    return text.replace("$", "$$")
