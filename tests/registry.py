"""A real image registry on 127.0.0.1 for push/pull tests: Debian's `docker-registry`.

The engine pushes to 127.0.0.0/8 over plain HTTP without any insecure-registries
setting, so no TLS is needed. Each registry gets a free port and its own storage folder.
"""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

BINARY = "/usr/bin/docker-registry"
CONFIG = """\
version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: {root}
{extra}http:
  addr: 127.0.0.1:{port}
"""
READ_ONLY = """\
  maintenance:
    readonly:
      enabled: true
"""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextlib.contextmanager
def running_registry(folder: Path, *, read_only: bool = False):
    """Start a registry; yield its address 127.0.0.1:PORT; stop it afterwards."""
    binary = shutil.which("docker-registry") or BINARY
    folder.mkdir(parents=True, exist_ok=True)
    port = free_port()
    config = folder / "config.yml"
    config.write_text(CONFIG.format(root=folder / "storage", port=port, extra=READ_ONLY if read_only else ""))
    log = open(folder / "registry.log", "wb")
    process = subprocess.Popen([binary, "serve", str(config)], stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/v2/", timeout=2).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"docker-registry did not start: {(folder / 'registry.log').read_text()[-2000:]}") from None
                time.sleep(0.2)
        yield f"127.0.0.1:{port}"
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()
