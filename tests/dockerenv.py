"""A real Docker engine and a locally built Debian+Python base image for the tests.

No registry is reachable here, so the base image is made with debootstrap from the
Debian mirror the host's apt already uses, then `docker import`ed and cached by tag.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path

# Debian suite -> the python3 minor it ships (the image tag carries it).
SUITES = {"bookworm": "3.11", "trixie": "3.13"}
IMAGE_REVISION = "1"
PACKAGES = ("python3", "python3-venv", "ca-certificates")


def image_tag(suite: str) -> str:
    return f"bundler-test/{suite}-python{SUITES[suite]}:{IMAGE_REVISION}"


def debian_mirror() -> str:
    """The Debian mirror this host's apt uses (never a hard-coded host)."""
    sources = list(Path("/etc/apt/sources.list.d").glob("*.sources")) + [Path("/etc/apt/sources.list")]
    for source in sources:
        if not source.is_file():
            continue
        text = source.read_text(errors="replace")
        deb822 = re.search(r"^URIs:\s*(\S+/debian)\s*$", text, re.MULTILINE)
        one_line = re.search(r"^deb\s+(?:\[[^\]]*\]\s+)?(\S+/debian)\s", text, re.MULTILINE)
        match = deb822 or one_line
        if match:
            return match.group(1)
    raise RuntimeError("no Debian mirror found in /etc/apt/sources.list(.d); cannot debootstrap a base image")


def ensure_base_image(client, suite: str = "bookworm") -> str:
    """Return the tag of a Debian `suite` image with python3 + venv, building it once."""
    import docker.errors

    tag = image_tag(suite)
    try:
        client.images.get(tag)
        return tag
    except docker.errors.ImageNotFound:
        pass
    if shutil.which("debootstrap") is None:
        raise RuntimeError("debootstrap is not installed (apt-get install debootstrap); .ci/run installs it")
    with tempfile.TemporaryDirectory(prefix=f"rootfs-{suite}-") as work:
        root = Path(work) / "root"
        subprocess.run(
            ["debootstrap", "--variant=minbase", f"--include={','.join(PACKAGES)}", suite, str(root), debian_mirror()],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        _trim_rootfs(root)
        archive = Path(work) / "rootfs.tar"
        with tarfile.open(archive, "w") as tar:
            tar.add(root, arcname=".")
        with open(archive, "rb") as handle:
            client.api.import_image_from_data(
                handle.read(),
                repository=tag.split(":")[0],
                tag=tag.split(":")[1],
                changes=['CMD ["/bin/bash"]', "ENV LANG=C.UTF-8"],
            )
    return tag


def _trim_rootfs(root: Path) -> None:
    for folder in ("var/cache/apt/archives", "var/lib/apt/lists", "usr/share/doc", "usr/share/man", "usr/share/locale"):
        target = root / folder
        if target.is_dir():
            for child in target.iterdir():
                if child.is_dir() and not child.is_symlink():
                    shutil.rmtree(child, ignore_errors=True)
                else:
                    child.unlink(missing_ok=True)


def engine_client():
    """A docker-py client that answers, or None."""
    import docker
    from requests.exceptions import RequestException

    try:
        client = docker.from_env(timeout=300)
        client.ping()
        return client
    except (docker.errors.DockerException, RequestException):
        return None


def in_ci() -> bool:
    return bool(os.environ.get("CI"))


def require(why: str) -> None:
    """When ``why`` says a real part is missing: fail under CI=true, skip elsewhere."""
    import pytest

    if why:
        if in_ci():
            pytest.fail(why)
        pytest.skip(why)
