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
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path

from packaging.utils import canonicalize_name

from bundler.errors import LockError
from bundler.fsutil import sha256_bytes

HEADER_KEYS = (
    "target",
    "target-json",
    "build",
    "torch-index",
    "index-url",
    "extra-index-url",
    "base-image",
    "bundler-version",
    "resolver",
    "input-sha256",
    "body-sha256",
)
TARGET_FIELDS = ("backend", "accelerator", "torch", "python", "platform", "torch_index")
DEFAULT_TORCH_INDEX = "pytorch"
_HEADER_LINE = re.compile(r"^# ([a-z0-9-]+): (.*)$")
_REQUIREMENT = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(\[[^\]]*\])?\s*==\s*([^\s;\\]+)")
_HASH = re.compile(r"--hash=sha256:([0-9a-f]{64})\b")


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


def render_lock(name: str, header: LockHeader, requirements_body: str) -> str:
    """The full lock text: header, the target's index lines, then the requirements."""
    index_lines = [f"--index-url {header.index_url}"] + [f"--extra-index-url {url}" for url in header.extra_index_urls]
    body = "\n".join(index_lines) + "\n\n" + requirements_body.strip() + "\n"
    lines = [
        f"# {name}: hashed lock written by `bundler lock`. Do not edit by hand: change",
        "# requirements.in or bundle.toml [target] and run `bundler lock` again.",
        f"# target: {header.describe_target()}",
        f"# target-json: {json.dumps(header.target, sort_keys=True)}",
        f"# build: {header.build}",
        f"# torch-index: {header.torch_index}",
        f"# index-url: {header.index_url}",
        f"# extra-index-url: {' '.join(header.extra_index_urls)}",
        f"# base-image: {header.base_image}",
        f"# bundler-version: {header.bundler_version}",
        f"# resolver: {header.resolver}",
        f"# input-sha256: {header.input_sha256}",
        f"# body-sha256: {body_hash(body)}",
    ]
    return "\n".join(lines) + "\n" + body


def split_lock(text: str) -> tuple[dict[str, str], str]:
    """(header key -> value, body) of a lock; the header is the leading comment block."""
    lines = text.splitlines()
    fields: dict[str, str] = {}
    index = 0
    while index < len(lines) and lines[index].startswith("#"):
        match = _HEADER_LINE.match(lines[index])
        if match and match.group(1) in HEADER_KEYS:
            fields[match.group(1)] = match.group(2).strip()
        index += 1
    return fields, "\n".join(lines[index:])


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


@dataclass(frozen=True)
class Pin:
    name: str  # canonical (lower case, '-' separated)
    version: str
    hashes: tuple[str, ...]
    line: str

    @property
    def label(self) -> str:
        return self.version.partition("+")[2]


def logical_lines(body: str) -> list[str]:
    """Requirement lines with backslash continuations joined and comments dropped."""
    joined, current = [], ""
    for raw in body.splitlines():
        line = raw.split(" #", 1)[0].rstrip() if not raw.lstrip().startswith("#") else ""
        if line.endswith("\\"):
            current += line[:-1] + " "
            continue
        current += line
        if current.strip():
            joined.append(current.strip())
        current = ""
    if current.strip():
        joined.append(current.strip())
    return joined


def parse_pins(body: str) -> list[Pin]:
    pins = []
    for line in logical_lines(body):
        if line.startswith("-"):
            continue
        match = _REQUIREMENT.match(line)
        name = canonicalize_name(match.group(1)) if match else line.split()[0]
        pins.append(Pin(name, match.group(3) if match else "", tuple(_HASH.findall(line)), line))
    return pins


# ----- state -----------------------------------------------------------------------
STATUSES = ("fresh", "stale", "missing", "tampered")


@dataclass(frozen=True)
class LockState:
    status: str  # one of STATUSES
    detail: str
    path: Path
    header: LockHeader | None = None

    @property
    def ok(self) -> bool:
        return self.status == "fresh"

    def as_dict(self) -> dict:
        data = {"status": self.status, "detail": self.detail, "path": str(self.path)}
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


def read_lock(lock_path: Path, requirements_in: str | None, target) -> Lock:
    """The lock at ``lock_path`` with its state against requirements.in and the Target."""
    lock_path = Path(lock_path)
    if not lock_path.is_file():
        return Lock(LockState("missing", f"{lock_path.name} does not exist yet; run `bundler lock`.", lock_path))
    data = lock_path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        return Lock(LockState("tampered", f"{lock_path.name} is not UTF-8 text (byte {error.start}).", lock_path))
    fields, body = split_lock(text)
    state = _state(lock_path, parse_header(fields), body, requirements_in, target)
    return Lock(state, text, body, tuple(parse_pins(body)), sha256_bytes(data))


def _state(lock_path: Path, header: LockHeader | None, body: str, requirements_in: str | None, target) -> LockState:
    name = lock_path.name
    if header is None:
        return LockState("tampered", f"{name} has no bundler header: it was written by hand or by another tool.", lock_path)
    if body_hash(body) != header.body_sha256:
        detail = (
            f"{name} was edited after `bundler lock` wrote it: its requirement or hash lines no longer match the body-sha256 of its header."
        )
        return LockState("tampered", detail, lock_path, header)
    if requirements_in is None:
        return LockState("stale", "requirements.in is missing, so the lock cannot be checked against it.", lock_path, header)
    if header.input_sha256 != input_hash(requirements_in, target):
        recorded = {"torch_index": DEFAULT_TORCH_INDEX} | header.target
        changed = [key for key in TARGET_FIELDS if str(recorded.get(key, "")) != str(getattr(target, key))]
        if changed:
            what = ", ".join(f"{key} {recorded.get(key)!r} -> {getattr(target, key)!r}" for key in changed)
            detail = f"bundle.toml [target] changed since the lock was written ({what})."
        else:
            detail = "requirements.in changed since the lock was written."
        return LockState("stale", detail + " Run `bundler lock`.", lock_path, header)
    return LockState("fresh", f"{name} matches requirements.in and the Target ({header.describe_target()}).", lock_path, header)


def bundle_lock(bundle) -> Lock:
    """The bundle's lock, its state judged against the project's requirements.in (with its includes) and Target."""
    from bundler.lock.includes import input_text

    return read_lock(bundle.lock_path, input_text(bundle.root, bundle.requirements), bundle.target)


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
