"""The labels of an image: OCI's (title, created, revision, source, base) and bundler's
(Target, lock sha256, base image by digest, flavour, entry, fabric; on a dependency image its
key, the pins it was made from and its checks' verdict). Nothing here reads the clock:
``created`` is SOURCE_DATE_EPOCH, the last commit or the lock's time."""

from __future__ import annotations

import datetime
import json
import os
import subprocess
from pathlib import Path

from bundler import __version__
from bundler.lock.lockfile import target_fields
from bundler.target.bundle import Bundle

LABEL_PREFIX = "io.bundler"
DEPS_LABEL = f"{LABEL_PREFIX}.deps.key"
LOCK_LABEL = f"{LABEL_PREFIX}.lock.sha256"
PINS_LABEL = f"{LABEL_PREFIX}.deps.pins.sha256"  # the lock's install body the dependency image was made from
VERDICT_LABEL = f"{LABEL_PREFIX}.deps.verdict"  # the dependency checks' results, recorded once
FABRIC_LABEL = f"{LABEL_PREFIX}.fabric"  # bundle.toml's [target] fabric: infiniband and roce images carry the RDMA user space


def git_output(root: Path, *args: str) -> str:
    try:
        completed = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return completed.stdout.strip() if completed.returncode == 0 else ""


def source_date_epoch(bundle: Bundle) -> tuple[int, str]:
    """(seconds, where they come from): SOURCE_DATE_EPOCH, else the project's last commit, else the
    lock's modification time. Never now: the same inputs must give the same labels."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH", "").strip()
    if epoch.isdigit():
        return int(epoch), "SOURCE_DATE_EPOCH"
    commit = git_output(bundle.root, "log", "-1", "--format=%ct")
    if commit.isdigit():
        return int(commit), "the last commit"
    return int(bundle.lock_path.stat().st_mtime), f"the modification time of {bundle.lock_path.name}"


def rfc3339(epoch: int) -> str:
    return datetime.datetime.fromtimestamp(epoch, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def labels_for(bundle: Bundle, flavour: str, base, lock_sha: str) -> dict:
    root = bundle.root
    revision = git_output(root, "rev-parse", "HEAD") or "unknown"
    epoch, source = source_date_epoch(bundle)
    return {
        "org.opencontainers.image.title": bundle.name,
        "org.opencontainers.image.created": rfc3339(epoch),
        f"{LABEL_PREFIX}.created.from": source,
        "org.opencontainers.image.revision": revision,
        "org.opencontainers.image.source": git_output(root, "config", "--get", "remote.origin.url") or "unknown",
        "org.opencontainers.image.version": git_output(root, "describe", "--tags", "--always", "--dirty") or "unversioned",
        "org.opencontainers.image.base.name": base.reference,
        "org.opencontainers.image.base.digest": base.digest.split("@")[-1] if base.digest else base.image_id,
        f"{LABEL_PREFIX}.version": __version__,
        f"{LABEL_PREFIX}.target": bundle.target.describe(),
        f"{LABEL_PREFIX}.target.json": json.dumps(target_fields(bundle.target), sort_keys=True),
        LOCK_LABEL: lock_sha,
        f"{LABEL_PREFIX}.base.image": base.reference,
        f"{LABEL_PREFIX}.base.digest": base.recorded,
        f"{LABEL_PREFIX}.base.kind": "registry-digest" if base.digest else "local-image-id",
        f"{LABEL_PREFIX}.flavour": flavour,
        f"{LABEL_PREFIX}.entry": bundle.entry,
        FABRIC_LABEL: bundle.fabric or "unsaid",
    }
