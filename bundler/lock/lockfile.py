"""The lock file (requirements-rebuild.txt): its format, its pins and its state.

A lock is ``header + body``. The header is a block of ``# key: value`` comment lines
stating the Target, the index URLs, the base image, the bundler version, the hash of the
inputs (requirements.in + Target: it differs -> the lock is *stale*) and the hash of the
body (it differs -> the lock was edited by hand: *tampered*). The body is what pip reads:
the target's index lines, then hashed ``name==version`` requirements.

``read_lock`` reads the file once into a ``Lock`` (state, header, pins, the body pip
installs, the file's sha256) that the build passes down its stages.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Literal

from bundler.contracts.lockformat import LockFormatError, Pin, parse_body, render_header, split_header
from bundler.contracts.oneline import NotOneLine, is_one_line
from bundler.errors import LockError
from bundler.fsutil import sha256_bytes

TARGET_FIELDS = ("backend", "accelerator", "torch", "python", "platform", "torch_index")
DEFAULT_TORCH_INDEX = "pytorch"


# ----- hashes ----------------------------------------------------------------------
def target_fields(target) -> dict:
    """The Target fields a lock depends on (the base image is not one: resolution runs
    for the Python/platform, and `bundler build` filling base_digest must not stale it).
    The default torch_index is left out, so that locks written before it existed stay fresh."""
    fields = {key: getattr(target, key) for key in TARGET_FIELDS}
    if fields["torch_index"] == DEFAULT_TORCH_INDEX:
        del fields["torch_index"]
    return fields


def input_hash(requirements_in: str, target) -> str:
    payload = requirements_in.replace("\r\n", "\n") + "\0" + json.dumps(target_fields(target), sort_keys=True)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def body_hash(body: str) -> str:
    return hashlib.sha256(body.strip().replace("\r\n", "\n").encode("utf-8")).hexdigest()


# ----- rendering and parsing -------------------------------------------------------
@dataclass(frozen=True)
class LockHeader:
    target: dict
    build: str
    index_url: str
    extra_index_urls: tuple[str, ...]
    base_image: str
    bundler_version: str
    input_sha256: str
    body_sha256: str = ""
    resolver: str = ""  # what resolved it, e.g. "pip-tools 7.6.2 on this host" (informational)

    @property
    def torch_index(self) -> str:
        """Where torch was locked from: pytorch (PyTorch's index of the build) or pypi."""
        return self.target.get("torch_index", DEFAULT_TORCH_INDEX)

    def describe_target(self) -> str:
        t = self.target
        build = f"{t.get('backend', '')} {t.get('accelerator', '')}".strip()
        source = " from PyPI" if self.torch_index == "pypi" else ""
        return f"torch {t.get('torch')}{source} for {build} on Python {t.get('python')} ({t.get('platform')})"


def render_lock(name: str, header: LockHeader, requirements_body: str, input_name: str = "requirements.in") -> str:
    """The full lock text: header, the target's index lines, then the requirements.

    Every header value is one line (``contracts/oneline.py``): a line break in a value would
    end the comment and make the rest a line pip reads."""
    index_lines = [f"--index-url {header.index_url}"] + [f"--extra-index-url {url}" for url in header.extra_index_urls]
    body = "\n".join(index_lines) + "\n\n" + requirements_body.strip() + "\n"
    values = {
        "target": header.describe_target(),
        "target-json": json.dumps(header.target, sort_keys=True),
        "build": header.build,
        "torch-index": header.torch_index,
        "index-url": header.index_url,
        "extra-index-url": " ".join(header.extra_index_urls),
        "base-image": header.base_image,
        "bundler-version": header.bundler_version,
        "resolver": header.resolver,
        "input-sha256": header.input_sha256,
        "body-sha256": body_hash(body),
    }
    title = [
        f"{name}: hashed lock written by `bundler lock`. Do not edit by hand: change",
        f"{input_name} or bundle.toml [target] and run `bundler lock` again.",
    ]
    try:
        return render_header(title, values) + body
    except NotOneLine as error:
        key = next((key for key, value in values.items() if not is_one_line(value)), "name")
        raise LockError(
            f"the lock's {key} would be {error}, which would break out of the lock's header comment.",
            hint=f"Fix the value where it comes from (bundle.toml [target], {input_name}); it must be one line.",
            value=values.get(key, name),
        ) from None


def split_lock(text: str) -> tuple[dict[str, str], str]:
    """(header key -> value, body) of a lock (contracts/lockformat.py)."""
    return split_header(text)


def parse_header(fields: dict[str, str]) -> LockHeader | None:
    if not all(key in fields for key in ("target-json", "input-sha256", "body-sha256", "index-url")):
        return None
    try:
        target = json.loads(fields["target-json"])
    except ValueError:
        return None
    return LockHeader(
        target=target,
        build=fields.get("build", ""),
        index_url=fields["index-url"],
        extra_index_urls=tuple(fields.get("extra-index-url", "").split()),
        base_image=fields.get("base-image", ""),
        bundler_version=fields.get("bundler-version", ""),
        input_sha256=fields["input-sha256"],
        body_sha256=fields["body-sha256"],
        resolver=fields.get("resolver", ""),
    )


def requirements_body(body: str) -> str:
    """The body without the index option lines (what pip-compile produced)."""
    kept = [line for line in body.splitlines() if not line.startswith(("--index-url", "--extra-index-url"))]
    return "\n".join(kept).strip() + "\n"


def parse_pins(body: str) -> list[Pin]:
    """The pins of a lock's body (the index lines skipped); LockFormatError naming a line that is no pin."""
    return list(parse_body(body).pins)


# ----- state -----------------------------------------------------------------------
LockStatus = Literal["fresh", "stale", "missing", "tampered"]


@dataclass(frozen=True)
class LockState:
    status: LockStatus
    detail: str
    path: Path
    header: LockHeader | None = None

    @property
    def ok(self) -> bool:
        return self.status == "fresh"

    def as_dict(self) -> dict:
        data: dict[str, object] = {"status": self.status, "detail": self.detail, "path": str(self.path)}
        data["header"] = asdict(self.header) if self.header else None
        return data


@dataclass(frozen=True)
class Lock:
    """A lock file read once: what the build and the checks take from it."""

    state: LockState
    text: str = ""
    body: str = ""  # index lines + requirements: what pip reads
    pins: tuple[Pin, ...] = field(default_factory=tuple)
    sha256: str = ""  # of the file's bytes (the image's label)

    @property
    def path(self) -> Path:
        return self.state.path

    @property
    def header(self) -> LockHeader | None:
        return self.state.header

    @property
    def install_body(self) -> str:
        """The requirements without the index lines: what an offline install reads."""
        return requirements_body(self.body)

    @property
    def indexes(self) -> list[str]:
        header = self.header
        return [header.index_url, *header.extra_index_urls] if header else []


def read_lock(lock_path: Path, requirements_in: str | None, target, input_name: str = "requirements.in") -> Lock:
    """The lock at ``lock_path`` with its state against its input (``requirements_in``: the text of
    the file ``input_name``, bundle.toml's [build] requirements) and the Target."""
    lock_path = Path(lock_path)
    if not lock_path.is_file():
        return Lock(LockState("missing", f"{lock_path.name} does not exist yet; run `bundler lock`.", lock_path))
    data = lock_path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        return Lock(LockState("tampered", f"{lock_path.name} is not UTF-8 text (byte {error.start}).", lock_path))
    fields, body = split_lock(text)
    state = _state(lock_path, parse_header(fields), body, requirements_in, target, input_name)
    try:
        pins = tuple(parse_pins(body))
    except LockFormatError as error:
        detail = f"{lock_path.name}, {error}: the lock's pins are name==version lines with sha256 hashes."
        return Lock(LockState("tampered", detail, lock_path, state.header), text, body, (), sha256_bytes(data))
    return Lock(state, text, body, pins, sha256_bytes(data))


def _state(lock_path: Path, header: LockHeader | None, body: str, requirements_in: str | None, target, input_name: str) -> LockState:
    name = lock_path.name
    if header is None:
        return LockState("tampered", f"{name} has no bundler header: it was written by hand or by another tool.", lock_path)
    if body_hash(body) != header.body_sha256:
        detail = (
            f"{name} was edited after `bundler lock` wrote it: its requirement or hash lines no longer match the body-sha256 of its header."
        )
        return LockState("tampered", detail, lock_path, header)
    if requirements_in is None:
        return LockState("stale", f"{input_name} is missing, so the lock cannot be checked against it.", lock_path, header)
    if header.input_sha256 != input_hash(requirements_in, target):
        recorded = {"torch_index": DEFAULT_TORCH_INDEX} | header.target
        changed = [key for key in TARGET_FIELDS if str(recorded.get(key, "")) != str(getattr(target, key))]
        if changed:
            what = ", ".join(f"{key} {recorded.get(key)!r} -> {getattr(target, key)!r}" for key in changed)
            detail = f"bundle.toml [target] changed since the lock was written ({what})."
        else:
            detail = f"{input_name} changed since the lock was written."
        return LockState("stale", detail + " Run `bundler lock`.", lock_path, header)
    return LockState("fresh", f"{name} matches {input_name} and the Target ({header.describe_target()}).", lock_path, header)


def bundle_lock(bundle) -> Lock:
    """The bundle's lock, its state judged against the project's requirements.in (with its includes) and Target."""
    from bundler.lock.requirements import input_text

    return read_lock(bundle.lock_path, input_text(bundle.root, bundle.requirements), bundle.target, bundle.requirements)


def fresh_lock(bundle) -> Lock:
    """The bundle's lock when it is fresh; a LockError saying what to do otherwise."""
    lock = bundle_lock(bundle)
    if not lock.state.ok:
        raise LockError(
            f"the lock {lock.path} is {lock.state.status}: {lock.state.detail}",
            hint="Run `bundler lock` in the project, then build again (the image installs exactly the lock).",
            path=lock.path,
            value=lock.state.status,
        )
    return lock
