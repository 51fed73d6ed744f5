"""A real Podman for the engine tests: its own `podman system service` on a socket of the session,
with a private containers.conf (limits this machine lets a container have) and private storage,
and the debootstrapped base image loaded into it from `docker save` (no registry is reachable).

The storage folder is kept between sessions, as Docker keeps its images: the base image is
loaded once, and a dependency image made once is reused like on Docker.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

CONTAINERS_CONF = """[containers]
# raising a container's limits above the service's own is forbidden on some machines
default_ulimits = ["nofile=4096:4096", "nproc=4096:4096"]
"""
STORAGE = Path(tempfile.gettempdir()) / f"bundler-test-podman-{os.geteuid()}"


@dataclass
class PodmanService:
    address: str
    process: subprocess.Popen
    log: Path
    env: dict = field(default_factory=dict)  # what a bundler process needs to find it

    def stop(self) -> None:
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.kill(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=30)


def missing() -> str:
    """Why Podman cannot run here ("" when it can)."""
    if shutil.which("podman") is None:
        return "podman is not installed (apt-get install podman; tests/host-setup.sh does it)"
    return ""


def start(folder: Path) -> PodmanService:
    """`podman system service --time=0` on ``folder``/podman.sock; waits until it answers."""
    folder.mkdir(parents=True, exist_ok=True)
    conf, storage = folder / "containers.conf", folder / "storage.conf"
    conf.write_text(CONTAINERS_CONF)
    STORAGE.mkdir(exist_ok=True)
    storage.write_text(f'[storage]\ndriver = "overlay"\ngraphroot = "{STORAGE / "graph"}"\nrunroot = "{folder / "run"}"\n')
    socket = folder / "podman.sock"
    env = {**os.environ, "CONTAINERS_CONF": str(conf), "CONTAINERS_STORAGE_CONF": str(storage)}
    log = folder / "service.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(
            ["podman", "system", "service", "--time=0", f"unix://{socket}"], env=env, stdout=out, stderr=subprocess.STDOUT
        )
    address = f"unix://{socket}"
    service = PodmanService(address, process, log, {"CONTAINER_HOST": address})
    for _ in range(100):
        if socket.exists() and _answers(address):
            return service
        if process.poll() is not None:
            break
        time.sleep(0.1)
    service.stop()
    raise RuntimeError(f"podman system service did not answer at {address}: {log.read_text(errors='replace')[-1500:]}")


def _answers(address: str) -> bool:
    from bundler.engine.podman import PodmanEngine

    try:
        PodmanEngine(address, timeout=5).ping()
        return True
    except Exception:  # noqa: BLE001 - not up yet
        return False


def load_from_docker(engine, docker_engine, tag: str) -> None:
    """``tag`` copied from Docker into Podman (`docker save` streamed into Podman's load) unless it is there."""
    if engine.image(tag) is not None:
        return
    with tempfile.TemporaryFile() as archive:
        for chunk in docker_engine.save(tag, 4 << 20):
            archive.write(chunk)
        archive.seek(0)
        engine.load(archive)
