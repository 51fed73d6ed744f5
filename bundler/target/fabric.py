"""The network between the nodes (bundle.toml ``[target] fabric``) and what the image needs for it.

NCCL (and RCCL) reach InfiniBand and RoCE adapters through the RDMA user space: libibverbs,
the providers that drive each adapter (mlx5, …) and librdmacm. PyTorch's wheels carry NCCL
but not these, and without them NCCL falls back to TCP sockets without a word. The image is
built before any job is written, so the bundle says the fabric and the build installs the
packages; ``bundler job --nodes N`` only warns when a job spans nodes on an image that
lacks them.

``fabric`` absent means "not said"; ``"none"`` says the nodes talk over Ethernet alone.
"""

from __future__ import annotations

FABRICS = ("infiniband", "roce", "none")
RDMA_FABRICS = ("infiniband", "roce")
# Debian's (and Ubuntu's) names: the verbs library, the adapters' providers, the connection manager.
RDMA_PACKAGES = ("libibverbs1", "ibverbs-providers", "librdmacm1")


def rdma_packages(fabric: str) -> tuple[str, ...]:
    """The system packages an image for ``fabric`` needs (none for Ethernet or an unsaid fabric)."""
    return RDMA_PACKAGES if fabric in RDMA_FABRICS else ()


def multi_node_note(fabric: str, nodes: int, bundle_path: object) -> str:
    """What a job of ``nodes`` nodes should be told about the image's fabric ("" when nothing)."""
    if nodes < 2 or fabric:
        return ""
    return (
        f"this job spans {nodes} nodes, but {bundle_path} does not say the fabric between them, so the image carries no RDMA "
        f"user space ({', '.join(RDMA_PACKAGES)}): on an InfiniBand or RoCE cluster NCCL falls back to TCP sockets, many times "
        'slower. Set fabric = "infiniband" (or "roce") in [target] and run `bundler build` again before you push the image; '
        'fabric = "none" says the nodes have Ethernet only and silences this note.'
    )
