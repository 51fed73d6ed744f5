"""What bundler needs around an engine: the base image (local or pulled) and the GPUs a
container of a backend gets on this host (``device_flags``, ``gpu_run_options``)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass

from bundler.engine.base import Devices, Engine, EngineFailure
from bundler.errors import ExternalError

ROCM_DEVICES = ("/dev/kfd", "/dev/dri")


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


def base_image(engine: Engine, reference: str, *, say: Callable[[str], None] = lambda text: None) -> BaseImage:
    """The base image, pulled when it is not local; ExternalError when neither works."""
    try:
        image = engine.image(reference)
    except EngineFailure as error:
        raise ExternalError(
            f"the engine cannot inspect {reference}: {error.explanation}.", hint="Check the image name.", value=reference
        ) from None
    if image is None:
        say(f"Pulling {reference}…")
        try:
            image = engine.pull(reference)
        except EngineFailure as error:
            raise ExternalError(
                f"the base image {reference} is not on this engine and cannot be pulled ({error.explanation[:300]}).",
                hint="Pull or load it where a registry is reachable (`docker pull`, `docker load -i`), or pass --base with a local image "
                "holding the Target's Python.",
                value=reference,
            ) from None
    name = reference.split("@")[0].rsplit(":", 1)[0] if ":" in reference.split("/")[-1] else reference.split("@")[0]
    digests = [digest for digest in image.digests if not digest.startswith("localhost/")]  # Podman's digest of a local image
    digest = next((d for d in digests if d.split("@")[0] == name), digests[0] if digests else "")
    return BaseImage(reference, image.id, digest, image.size)


def gpu_run_options(backend: str) -> tuple[Devices, list[str], bool]:
    """(what a container gets, notes, whether a GPU of the backend is on this host)."""
    nvidia = host_has_nvidia()
    rocm = tuple(path for path in ROCM_DEVICES if os.path.exists(path))
    present = (backend == "cuda" and nvidia) or (backend == "rocm" and len(rocm) == len(ROCM_DEVICES))
    devices, notes = device_flags(backend, nvidia_host=nvidia, rocm_devices=rocm)
    return devices, notes, present


def device_flags(backend: str, *, nvidia_host: bool, rocm_devices: tuple[str, ...] = ()) -> tuple[Devices, list[str]]:
    """What a container gets of the GPUs of ``backend``; plus notes for the user."""
    notes: list[str] = []
    if backend == "cuda":
        if not nvidia_host:
            notes.append("no NVIDIA driver on this host: the container gets no GPU, so the device stage will fail")
        return Devices(shm_size="8g", all_gpus=nvidia_host), notes
    if backend == "rocm":
        if len(rocm_devices) < len(ROCM_DEVICES):
            notes.append("no /dev/kfd or /dev/dri on this host: the container gets no AMD GPU")
        return Devices(devices=tuple(f"{path}:{path}:rwm" for path in rocm_devices), group_add=("video",), ipc_mode="host"), notes
    return Devices(shm_size="2g"), notes


def host_has_nvidia() -> bool:
    return os.path.exists("/proc/driver/nvidia/version") or shutil.which("nvidia-smi") is not None
