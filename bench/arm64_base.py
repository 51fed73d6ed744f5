"""Make the arm64 base image that `bench/bench_lock.py --aarch64-image TAG` needs: Debian
bookworm with python3.11 + venv, debootstrapped under emulation (qemu-user-static with
binfmt_misc; about 11 minutes once, then cached by tag). Prints the tag.

Usage: python bench/arm64_base.py
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

ARM64_IMAGE = "bundler-test/bookworm-arm64-python3.11:1"


def aarch64_emulated() -> bool:
    """Whether this kernel runs aarch64 binaries (binfmt_misc + qemu-user-static with the F flag)."""
    handler = Path("/proc/sys/fs/binfmt_misc/qemu-aarch64")
    return handler.is_file() and "enabled" in handler.read_text() and "F" in handler.read_text().split("flags:")[-1].split()[0]


def arm64_base_image(client) -> str:
    """A Debian bookworm arm64 image with python3.11 + venv (debootstrap under emulation, ~11 min once; cached by tag).

    `docker import` on this engine records the host's architecture, so the rootfs is loaded
    as a one-layer image archive whose config says arm64.
    """
    import hashlib
    import io
    import json
    import subprocess
    import tarfile
    import tempfile

    import docker.errors

    from tests.dockerenv import PACKAGES, _trim_rootfs, debian_mirror

    try:
        client.images.get(ARM64_IMAGE)
        return ARM64_IMAGE
    except docker.errors.ImageNotFound:
        pass
    with tempfile.TemporaryDirectory(prefix="rootfs-arm64-") as work:
        root = Path(work) / "root"
        argv = [
            "debootstrap",
            "--arch=arm64",
            "--variant=minbase",
            f"--include={','.join(PACKAGES)}",
            "bookworm",
            str(root),
            debian_mirror(),
        ]
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        _trim_rootfs(root)
        layer = Path(work) / "layer.tar"
        with tarfile.open(layer, "w") as tar:
            tar.add(root, arcname=".")
        diff_id = "sha256:" + hashlib.sha256(layer.read_bytes()).hexdigest()
        config = {
            "architecture": "arm64",
            "os": "linux",
            "config": {"Cmd": ["/bin/bash"], "Env": ["LANG=C.UTF-8", "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]},
            "rootfs": {"type": "layers", "diff_ids": [diff_id]},
        }
        data = json.dumps(config).encode()
        name = hashlib.sha256(data).hexdigest() + ".json"
        archive = io.BytesIO()
        with tarfile.open(fileobj=archive, mode="w") as tar:
            for member, payload in (
                (name, data),
                ("manifest.json", json.dumps([{"Config": name, "RepoTags": [ARM64_IMAGE], "Layers": ["layer.tar"]}]).encode()),
            ):
                info = tarfile.TarInfo(member)
                info.size = len(payload)
                tar.addfile(info, io.BytesIO(payload))
            tar.add(layer, arcname="layer.tar")
        client.images.load(archive.getvalue())
    return ARM64_IMAGE


def main() -> int:
    import docker

    if not aarch64_emulated():
        print("this kernel does not run aarch64 binaries: apt-get install qemu-user-static binfmt-support, binfmt_misc mounted")
        return 1
    print(arm64_base_image(docker.from_env(timeout=3600)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
