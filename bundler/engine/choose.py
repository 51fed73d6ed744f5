"""Which engine bundler talks to, and the one paragraph when it does not answer.

``--engine docker|podman`` decides; without it ``CONTAINER_HOST`` (Podman's variable) or
a ``DOCKER_HOST`` naming a Podman socket means Podman, anything else Docker at
``DOCKER_HOST`` or its default socket.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from bundler.engine import podman
from bundler.engine.base import Engine, EngineFailure
from bundler.errors import EngineError, UsageError

ENGINES = ("docker", "podman")
CLIENT_TIMEOUT_S = 900


@dataclass(frozen=True)
class Choice:
    name: str  # "docker" | "podman"
    address: str
    why: str  # what decided it, for the paragraph


def choose(name: str | None = None) -> Choice:
    """The engine asked for (``--engine``), else the one the environment names."""
    from bundler.engine.dockerapi import DEFAULT_ADDRESS

    if name is not None and name not in ENGINES:
        raise UsageError(f"--engine {name!r} is not an engine bundler knows.", hint=f"Use one of: {', '.join(ENGINES)}.", value=name)
    docker_host = os.environ.get("DOCKER_HOST", "")
    container_host = os.environ.get("CONTAINER_HOST", "")
    podman_docker_host = "podman" in docker_host
    if name == "docker":
        return Choice("docker", docker_host or DEFAULT_ADDRESS, "--engine docker")
    if name == "podman":
        return Choice("podman", container_host or (docker_host if podman_docker_host else podman.default_address()), "--engine podman")
    if container_host:
        return Choice("podman", container_host, "CONTAINER_HOST is set")
    if podman_docker_host:
        return Choice("podman", docker_host, "DOCKER_HOST names a Podman socket")
    return Choice("docker", docker_host or DEFAULT_ADDRESS, "DOCKER_HOST" if docker_host else "Docker's default socket")


def connect(name: str | None = None, timeout: int = CLIENT_TIMEOUT_S, *, why: str = "", alternative: str = "") -> Engine:
    """An engine that answers (its API version), else EngineError (exit 7) saying how to start one.

    ``why`` says what the engine is needed for; ``alternative`` a way to do without one.
    """
    from bundler.engine.dockerapi import DockerEngine

    choice = choose(name)
    kind = podman.PodmanEngine if choice.name == "podman" else DockerEngine
    try:
        return kind(choice.address, timeout=timeout)  # the client asks the engine its API version: that answer is the ping
    except (EngineFailure, OSError) as error:
        words = error.explanation if isinstance(error, EngineFailure) else str(error)
        message = f"no {kind.label} engine answers at {choice.address} ({choice.why}; {words[:300]})."
        if choice.name == "podman":
            hint = podman.start_hint(choice.address)
        else:
            hint = (
                "Start one (`sudo systemctl start docker`, or `sudo dockerd &`; on macOS start Docker Desktop or colima), "
                "or point DOCKER_HOST at a running engine, or pass --engine podman, then try again."
            )
        raise EngineError(f"{why}; but {message}" if why else message, hint=f"{hint} {alternative}".strip(), value=choice.address) from None
