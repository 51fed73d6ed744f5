"""`bundler job sky`: a SkyPilot task.

The image is the cluster's runtime (``resources.image_id: docker:REF``, by digest when
known) and the accelerators come from the order (card, GPUs per node). ``setup`` runs the
diagnostics on every node through torchrun with SkyPilot's setup variables
(SKYPILOT_SETUP_NODE_RANK, SKYPILOT_SETUP_NODE_IPS): a failing node fails the launch
before ``run`` starts the entry with SKYPILOT_NODE_RANK, SKYPILOT_NODE_IPS,
SKYPILOT_NUM_NODES and SKYPILOT_NUM_GPUS_PER_NODE.
"""

from __future__ import annotations

from bundler.image import layout
from bundler.jobs import launch
from bundler.jobs.jobfile import yaml_text
from bundler.jobs.launch import Var

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


def render(inputs) -> str:
    resources: dict = {"image_id": f"docker:{inputs.image.pinned}"}
    if inputs.gpus_per_node:
        resources["accelerators"] = {accelerator(inputs): inputs.gpus_per_node}
    entry = launch.entry(inputs.bundle)
    task = {
        "name": inputs.name,
        "num_nodes": inputs.nodes,
        "resources": resources,
        "envs": {"BUNDLE_LOCK_SHA256": inputs.lock_sha256, "BUNDLE_IMAGE": inputs.image.given},
        "setup": _script(
            first_ip("SKYPILOT_SETUP_NODE_IPS"),
            launch.shell(
                launch.static_rendezvous(
                    str(inputs.nodes), "1", Var("SKYPILOT_SETUP_NODE_RANK"), Var("MASTER_ADDR"), launch.DIAGNOSTICS_PORT
                )
                + launch.diagnostics_args()
            ),
        ),
        "run": _script(
            first_ip("SKYPILOT_NODE_IPS"),
            *launch.exports(entry.env),
            "exec "
            + launch.shell(
                launch.static_rendezvous(
                    Var("SKYPILOT_NUM_NODES"),
                    Var("SKYPILOT_NUM_GPUS_PER_NODE") if inputs.gpus_per_node else "1",
                    Var("SKYPILOT_NODE_RANK"),
                    Var("MASTER_ADDR"),
                    launch.ENTRY_PORT,
                )
                + list(entry.args)
            ),
        ),
    }
    return yaml_text(task)


def _script(*lines: str) -> str:
    return "\n".join(["set -euo pipefail", launch.shell(["cd", layout.PROJECT]), *lines]) + "\n"
