"""Podman: the Engine interface over Podman's Docker-compatible service (`podman system service`).

Its service answers the Docker Engine API's requests (network_mode="host" builds included),
so this is Docker's implementation with what Podman does its own way: it names
local images ``localhost/NAME`` or ``docker.io/NAME`` (bundler names them ``NAME``), leaves the ``sha256:``
prefix off some IDs (dockerapi.py spells every ID one way), and its builder (buildah)
labels every image ``io.buildah.version``. Its builder makes an empty ``/etc/hosts`` in the
first RUN layer of a base that has none, dated by the clock: builds are sent with
buildah's ``timestamp`` (the build's ``source_date``), which dates every file of the new
layers and the image itself, so that two builds of the same inputs give the same layers. A push to
or pull from a registry on loopback goes over plain HTTP, as Docker's does. A container needs a ``containers.conf``
with ``default_ulimits`` on machines that forbid raising limits (README, "Podman").
"""

from __future__ import annotations

import os

from bundler.engine import wire
from bundler.engine.base import EngineFailure, Image, ImageMissing
from bundler.engine.dockerapi import DockerEngine, is_loopback_registry

ROOT_SOCKET = "unix:///run/podman/podman.sock"
LIBPOD = "/v4.0.0/libpod"  # Podman's own API, as of the oldest Podman bundler takes (README, "Engines")
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

    def pull(self, reference: str) -> Image:
        """Podman's own pull (libpod's), which takes ``tlsVerify``: its Docker-compatible one does not."""
        query = {"reference": reference, **self._registry_query(reference)}
        with self._calls(), self._api.open("POST", wire.Api.path(f"{LIBPOD}/images/pull", **query), timeout=None) as answer:
            for event in answer.events():
                if event.get("error"):
                    raise EngineFailure(str(event["error"]), engine=self.label)
        pulled = self.image(reference)
        if pulled is None:
            raise ImageMissing(f"{reference} is not on the engine after its pull", engine=self.label)
        return pulled

    def _registry_query(self, repository: str) -> dict[str, object]:
        """Docker reaches a registry on loopback over plain HTTP by itself; Podman is told to (``tlsVerify``)."""
        return {"tlsVerify": False} if is_loopback_registry(repository) else {}
