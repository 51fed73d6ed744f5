"""The engine floor: one ``Engine`` interface (base.py) and its implementations, Docker
(dockerapi.py) and Podman (podman.py); which one answers (choose.py); the base image and
GPU flags (host.py). Nothing above this package imports the Docker SDK.

Importing this package imports no SDK (start-up stays light): the implementations
import it when an engine is connected.
"""

from bundler.engine.base import (
    BuildFailed,
    Devices,
    Engine,
    EngineFailure,
    EngineHost,
    EngineVersion,
    HistoryEntry,
    Image,
    ImageMissing,
    Mount,
    PushEvent,
    RunResult,
    RunSpec,
    StartFailed,
)
from bundler.engine.choose import ENGINES, Choice, choose, connect
from bundler.engine.host import BaseImage, base_image, device_flags, gpu_run_options, host_has_nvidia

__all__ = [
    "ENGINES",
    "BaseImage",
    "BuildFailed",
    "Choice",
    "Devices",
    "Engine",
    "EngineFailure",
    "EngineHost",
    "EngineVersion",
    "HistoryEntry",
    "Image",
    "ImageMissing",
    "Mount",
    "PushEvent",
    "RunResult",
    "RunSpec",
    "StartFailed",
    "base_image",
    "choose",
    "connect",
    "device_flags",
    "gpu_run_options",
    "host_has_nvidia",
]
