"""Podman: the Engine interface over Podman's Docker-compatible service (`podman system service`).

The Docker SDK builds (network_mode="host" included), labels, runs and saves against
it, so this is Docker's implementation with what Podman does its own way: it names
local images ``localhost/NAME`` or ``docker.io/NAME`` (bundler names them ``NAME``), leaves the ``sha256:``
prefix off some IDs (dockerapi.py spells every ID one way), and its builder (buildah)
labels every image ``io.buildah.version``. Its builder makes an empty ``/etc/hosts`` in the
first RUN layer of a base that has none, dated by the clock: builds are sent with
buildah's ``timestamp`` (the build's ``source_date``), which dates every file of the new
layers and the image itself, so that two builds of the same inputs give the same layers. A container needs a ``containers.conf``
with ``default_ulimits`` on machines that forbid raising limits (README, "Podman").
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any, BinaryIO

from bundler.engine.dockerapi import DockerEngine

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

    def _build_events(self, context: BinaryIO, tag: str | None, source_date: int | None, options: dict[str, Any]) -> Iterator[dict]:
        """Docker's build request plus buildah's ``timestamp`` (the SDK has no parameter for it)."""
        api = self._client.api
        params: dict[str, Any] = {"t": tag, "rm": True, "forcerm": True, "pull": False, "nocache": options["nocache"]}
        params |= {"labels": json.dumps(options["labels"]), "buildargs": json.dumps(options["buildargs"])}
        if options["network_mode"]:
            params["networkmode"] = options["network_mode"]
        if source_date is not None:
            params["timestamp"] = source_date
        response = api._post(api._url("/build"), params=params, data=context, headers={"Content-Type": "application/x-tar"}, stream=True)
        api._raise_for_status(response)
        return api._stream_helper(response, decode=True)
