"""The ``docker run`` commands printed after a build: they pass as printed.

A default engine gives a container 64 MiB of /dev/shm, which fails the diagnostics' io
stage (and kills DataLoader workers); a GPU Target's container also needs its devices.
The flags come from ``bundler.engine.device_flags``, the options `bundler diagnose
--image` itself uses, written as command-line flags and shell-quoted.
"""

from __future__ import annotations

import shlex

from bundler.engine import ROCM_DEVICES, device_flags


def run_flags(backend: str) -> list[str]:
    """``docker run`` flags for a container of ``backend`` on a host that has its GPUs."""
    options, _ = device_flags(backend, nvidia_host=True, rocm_devices=ROCM_DEVICES)
    flags: list[str] = []
    if options.get("device_requests"):
        flags += ["--gpus", "all"]
    for device in options.get("devices", []):
        flags += ["--device", device.split(":", 1)[0]]
    for group in options.get("group_add", []):
        flags += ["--group-add", group]
    if options.get("ipc_mode"):
        flags.append(f"--ipc={options['ipc_mode']}")
    if options.get("shm_size"):
        flags += ["--shm-size", str(options["shm_size"])]
    return flags


def run_commands(tag: str, backend: str) -> dict[str, str]:
    """{"run": …, "diagnose": …}: the project's entry and the diagnostics, ready to paste."""
    base = ["docker", "run", "--rm", *run_flags(backend), tag]
    return {"run": shlex.join(base), "diagnose": shlex.join([*base, "diagnose"])}
