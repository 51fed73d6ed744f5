"""Podman: the Engine interface over Podman's Docker-compatible service (`podman system service`).

Its service answers the Docker Engine API's requests (network_mode="host" builds included),
so this is Docker's implementation with what Podman does its own way: it names
local images ``localhost/NAME`` or ``docker.io/NAME`` (bundler names them ``NAME``), leaves the ``sha256:``
prefix off some IDs (dockerapi.py spells every ID one way), and its builder (buildah)
labels every image ``io.buildah.version``. Its builder makes an empty ``/etc/hosts`` in the
first RUN layer of a base that has none, dated by the clock: builds are sent with
buildah's ``timestamp`` (the build's ``source_date``), which dates every file of the new
layers and the image itself, so that two builds of the same inputs give the same layers. A push
to a registry on loopback goes over plain HTTP, as Docker's does. A container needs a ``containers.conf``
with ``default_ulimits`` on machines that forbid raising limits (README, "Podman").
"""

from __future__ import annotations

import os

from bundler.engine.dockerapi import DockerEngine, is_loopback_registry

ROOT_SOCKET = "unix:///run/podman/podman.sock"
# the registries Podman writes into a short name: a tag made here (localhost/), by its compat build (docker.io/)
IMPLIED = ("localhost/", "docker.io/library/", "docker.io/")


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
        for prefix in IMPLIED:
            if tag.startswith(prefix):
                return tag[len(prefix) :]
        return tag

    def _build_query(
        self, tag: str | None, network_mode: str | None, labels: dict, buildargs: dict, no_cache: bool, source_date: int | None
    ) -> dict[str, object]:
        """Docker's build query plus buildah's ``timestamp``."""
        query = super()._build_query(tag, network_mode, labels, buildargs, no_cache, source_date)
        return query | ({"timestamp": source_date} if source_date is not None else {})

    def _push_query(self, repository: str, tag: str) -> dict[str, object]:
        """Docker pushes to a registry on loopback over plain HTTP by itself; Podman is told to (``tlsVerify``)."""
        return super()._push_query(repository, tag) | ({"tlsVerify": False} if is_loopback_registry(repository) else {})
