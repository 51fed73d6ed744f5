"""The ``docker run`` commands printed after a build: they pass as printed.

A default engine gives a container 64 MiB of /dev/shm, which fails the diagnostics' io
stage (and kills DataLoader workers); a GPU Target's container also needs its devices.
The flags come from ``bundler.engine.device_flags``, the options `bundler diagnose
--image` itself uses, written as command-line flags and shell-quoted.
"""

from __future__ import annotations

import shlex

from bundler.engine import device_flags
from bundler.engine.host import ROCM_DEVICES


def run_flags(backend: str, engine: str = "docker") -> list[str]:
    """``docker run`` (or ``podman run``) flags for a container of ``backend`` on a host that has its GPUs."""
    devices, _ = device_flags(backend, nvidia_host=True, rocm_devices=ROCM_DEVICES)
    flags: list[str] = []
    if devices.all_gpus:
        flags += ["--device", "nvidia.com/gpu=all"] if engine == "podman" else ["--gpus", "all"]  # Podman: the toolkit's CDI name
    for device in devices.devices:
        flags += ["--device", device.split(":", 1)[0]]
    for group in devices.group_add:
        flags += ["--group-add", group]
    if devices.ipc_mode:
        flags.append(f"--ipc={devices.ipc_mode}")
    if devices.shm_size:
        flags += ["--shm-size", devices.shm_size]
    return flags


def run_commands(tag: str, backend: str, engine: str = "docker") -> dict[str, str]:
    """{"run": …, "diagnose": …}: the project's entry and the diagnostics, ready to paste (``engine`` names the command)."""
    base = [engine, "run", "--rm", *run_flags(backend, engine), tag]
    return {"run": shlex.join(base), "diagnose": shlex.join([*base, "diagnose"])}
