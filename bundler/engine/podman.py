"""Podman: the Engine interface over Podman's Docker-compatible service (`podman system service`).

The Docker SDK builds (network_mode="host" included), labels, runs and saves against
it, so this is Docker's implementation with what Podman does its own way: it names
local images ``localhost/NAME`` (bundler names them ``NAME``), leaves the ``sha256:``
prefix off some IDs (dockerapi.py spells every ID one way), and its builder (buildah)
labels every image ``io.buildah.version``. A container needs a ``containers.conf``
with ``default_ulimits`` on machines that forbid raising limits (README, "Podman").
"""

from __future__ import annotations

import os

from bundler.engine.dockerapi import DockerEngine

ROOT_SOCKET = "unix:///run/podman/podman.sock"
LOCAL = "localhost/"


def default_address() -> str:
    """Where `podman system service` listens by default: root's socket, or the user's runtime folder's."""
    if os.geteuid() == 0:
        return ROOT_SOCKET
    runtime = os.environ.get("XDG_RUNTIME_DIR") or f"/run/user/{os.geteuid()}"
    return f"unix://{runtime}/podman/podman.sock"


def start_hint(address: str) -> str:
    return (
        f"Start Podman's service: `podman system service --time=0 {address} &` (rootless: a socket under $XDG_RUNTIME_DIR), "
        f"then point CONTAINER_HOST at it (`export CONTAINER_HOST={address}`) and try again; or pass --engine docker."
    )


class PodmanEngine(DockerEngine):
    name = "podman"
    label = "Podman"
    added_labels = ("io.buildah.version",)

    def _tag_name(self, tag: str) -> str:
        return tag[len(LOCAL) :] if tag.startswith(LOCAL) else tag
