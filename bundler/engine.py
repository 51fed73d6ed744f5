"""The Docker engine as bundler uses it: a client that answers, base images, GPU run flags.

One place for what lock (resolution in a container), build (the images and their smoke
test) and diagnose (`--image`) ask of the engine. ``device_flags`` gives a container
the GPUs of a backend; ``gpu_run_options`` adds what this host has; ``loopback_blocker``
says whether a build container on the host network reaches this host's 127.0.0.1.
"""

from __future__ import annotations

import os
import shutil
import socket
from dataclasses import dataclass

from bundler.errors import EngineError, ExternalError

CLIENT_TIMEOUT_S = 900
ROCM_DEVICES = ("/dev/kfd", "/dev/dri")


def client(timeout: int = CLIENT_TIMEOUT_S, *, why: str = "", alternative: str = ""):
    """A docker-py client whose engine answers a ping, else EngineError saying how to start one.

    ``why`` says what the engine is needed for; ``alternative`` a way to do without one.
    """
    import docker
    from docker.errors import DockerException
    from requests.exceptions import RequestException

    where = os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"
    try:
        engine = docker.from_env(timeout=timeout)
        engine.ping()
        return engine
    except (DockerException, RequestException, OSError) as error:  # ping() lets requests' errors through unwrapped
        message = f"no Docker engine answers at {where} ({_short(error)})."
        hint = (
            "Start one (`sudo systemctl start docker`, or `sudo dockerd &`; on macOS start Docker Desktop or colima), "
            "or point DOCKER_HOST at a running engine, then try again."
        )
        raise EngineError(
            f"{why}; but {message}" if why else message,
            hint=f"{hint} {alternative}".strip(),
            value=where,
        ) from None


def _short(error: Exception) -> str:
    text = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    return text[:300]


@dataclass(frozen=True)
class BaseImage:
    reference: str  # what the user asked for (tag)
    image_id: str
    digest: str  # repo@sha256:… when the image came from a registry, else ""
    size: int

    @property
    def recorded(self) -> str:
        """What the labels record: the registry digest, or the image ID for a local import."""
        return self.digest or self.image_id

    @property
    def note(self) -> str:
        if self.digest:
            return ""
        return (
            f"{self.reference} has no registry digest (it was built or imported locally): its image ID {self.image_id} is recorded instead"
        )


def base_image(engine, reference: str, *, say=lambda text: None) -> BaseImage:
    """The base image, pulled when it is not local; ExternalError when neither works."""
    import docker.errors

    try:
        image = engine.images.get(reference)
    except docker.errors.ImageNotFound:
        say(f"Pulling {reference}…")
        try:
            image = engine.images.pull(reference)
        except docker.errors.APIError as error:
            raise ExternalError(
                f"the base image {reference} is not on this engine and cannot be pulled ({(error.explanation or str(error))[:300]}).",
                hint="Pull or load it where a registry is reachable (`docker pull`, `docker load -i`), or pass --base with a local image "
                "holding the Target's Python.",
                value=reference,
            ) from None
    except docker.errors.APIError as error:
        raise ExternalError(
            f"the engine cannot inspect {reference}: {error.explanation or error}.", hint="Check the image name.", value=reference
        ) from None
    digests = image.attrs.get("RepoDigests") or []
    name = reference.split("@")[0].rsplit(":", 1)[0] if ":" in reference.split("/")[-1] else reference.split("@")[0]
    digest = next((d for d in digests if d.split("@")[0] == name), digests[0] if digests else "")
    return BaseImage(reference, image.id, digest, int(image.attrs.get("Size") or 0))


def loopback_blocker(engine) -> str:
    """Why a build with ``network_mode="host"`` would not see this host's 127.0.0.1 ("" when it would).

    The engine must be this machine's own: a local socket, the same host name, not a
    rootless engine (its host network is a namespace of its own) nor a VM (Docker
    Desktop, colima, lima: their engine names itself after the VM).
    """
    from docker.errors import DockerException
    from requests.exceptions import RequestException

    where = os.environ.get("DOCKER_HOST", "")
    if where and not where.startswith("unix://"):
        return f"the engine is remote (DOCKER_HOST={where})"
    try:
        info = engine.info()
    except (DockerException, RequestException) as error:
        return f"the engine did not describe itself ({_short(error)})"
    if "Docker Desktop" in str(info.get("OperatingSystem", "")):
        return "the engine runs in Docker Desktop's virtual machine"
    if any("rootless" in str(option) for option in info.get("SecurityOptions") or []):
        return "the engine is rootless: its host network is a namespace of its own"
    if info.get("Name") != socket.gethostname():
        return f"the engine runs on {info.get('Name')!r}, not on this host ({socket.gethostname()!r})"
    return ""


def gpu_run_options(backend: str) -> tuple[dict, list[str], bool]:
    """(docker-py run options, notes, whether a GPU of the backend is on this host)."""
    nvidia = host_has_nvidia()
    rocm = tuple(path for path in ROCM_DEVICES if os.path.exists(path))
    present = (backend == "cuda" and nvidia) or (backend == "rocm" and len(rocm) == len(ROCM_DEVICES))
    options, notes = device_flags(backend, nvidia_host=nvidia, rocm_devices=rocm)
    return options, notes, present


def device_flags(backend: str, *, nvidia_host: bool, rocm_devices: tuple = ()) -> tuple[dict, list]:
    """docker-py run options giving a container the GPUs of ``backend``; plus notes for the user."""
    notes: list = []
    if backend == "cuda":
        options: dict = {"shm_size": "8g"}
        if nvidia_host:
            import docker.types

            options["device_requests"] = [docker.types.DeviceRequest(count=-1, capabilities=[["gpu"]])]
        else:
            notes.append("no NVIDIA driver on this host: the container gets no GPU, so the device stage will fail")
        return options, notes
    if backend == "rocm":
        if len(rocm_devices) < len(ROCM_DEVICES):
            notes.append("no /dev/kfd or /dev/dri on this host: the container gets no AMD GPU")
        return {"devices": [f"{path}:{path}:rwm" for path in rocm_devices], "group_add": ["video"], "ipc_mode": "host"}, notes
    return {"shm_size": "2g"}, notes


def host_has_nvidia() -> bool:
    return os.path.exists("/proc/driver/nvidia/version") or shutil.which("nvidia-smi") is not None
