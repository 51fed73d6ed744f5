"""The lock file (requirements-rebuild.txt): header, lint, state and verification.

A lock is ``header + body``. The header is a block of ``# key: value`` comment lines
stating the Target, the index URLs, the base image, the bundler version, the hash of the
inputs (requirements.in + Target: it differs -> the lock is *stale*) and the hash of the
body (it differs -> the lock was edited by hand: *tampered*). The body is what pip reads:
the target's index lines, then hashed ``name==version`` requirements.
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
import subprocess
from dataclasses import asdict, dataclass, field
from pathlib import Path

from bundler.errors import LockError

HEADER_KEYS = (
    "target", "target-json", "build", "index-url", "extra-index-url", "base-image",
    "bundler-version", "input-sha256", "body-sha256",
)
TARGET_FIELDS = ("backend", "accelerator", "torch", "python", "platform")
_HEADER_LINE = re.compile(r"^# ([a-z0-9-]+): (.*)$")
_REQUIREMENT = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(\[[^\]]*\])?\s*==\s*([^\s;\\]+)")
_HASH = re.compile(r"--hash=sha256:([0-9a-f]{64})\b")
_FILE_URL = re.compile(r"\bfile:/", re.IGNORECASE)
_HOME_PATH = re.compile(r"(/home/|/Users/|/root/|~/|[A-Za-z]:\\\\Users\\\\)")
COMPANIONS = ("torchvision", "torchaudio")


# ----- hashes ----------------------------------------------------------------------
def target_fields(target) -> dict:
    """The Target fields a lock depends on (the base image is not one: resolution runs
    for the Python/platform, and `bundler build` filling base_digest must not stale it)."""
    return {key: getattr(target, key) for key in TARGET_FIELDS}


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

    def describe_target(self) -> str:
        t = self.target
        build = f"{t.get('backend', '')} {t.get('accelerator', '')}".strip()
        return f"torch {t.get('torch')} for {build} on Python {t.get('python')} ({t.get('platform')})"


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
        f"# index-url: {header.index_url}",
        f"# extra-index-url: {' '.join(header.extra_index_urls)}",
        f"# base-image: {header.base_image}",
        f"# bundler-version: {header.bundler_version}",
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


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


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
        name = canonical(match.group(1)) if match else line.split()[0]
        pins.append(Pin(name, match.group(3) if match else "", tuple(_HASH.findall(line)), line))
    return pins


# ----- lint ------------------------------------------------------------------------
def lint_lock(text: str, target, expected: dict[str, str], needs_setuptools: bool) -> list[str]:
    """Problems that make a lock unfit to write; [] when it is good.

    ``expected`` maps torch and each companion to its exact labelled version.
    """
    problems = []
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if _FILE_URL.search(stripped):
            problems.append(f"line {number} points at a local file URL ({stripped[:80]}): host-specific")
        elif stripped.startswith(("--find-links", "-f ", "--trusted-host", "-e ", "--editable")):
            problems.append(f"line {number} is a host-specific option ({stripped[:80]})")
        elif _HOME_PATH.search(stripped):
            problems.append(f"line {number} names a home folder ({stripped[:80]}): host-specific")
        elif stripped.startswith(("/", "./", "../")):
            problems.append(f"line {number} is a local path ({stripped[:80]}): host-specific")
    _, body = split_lock(text)
    pins = {pin.name: pin for pin in parse_pins(body)}
    for pin in pins.values():
        if not pin.version:
            problems.append(f"{pin.line[:80]!r} is not an exact name==version pin")
        elif not pin.hashes:
            problems.append(f"{pin.name}=={pin.version} has no --hash")
    for name, version in expected.items():
        pin = pins.get(canonical(name))
        if pin is None:
            if name == "torch":
                problems.append("torch is missing from the lock")
            continue
        if pin.version != version:
            problems.append(f"{name}=={pin.version} is not the build of the Target ({name}=={version})")
    torch_pin = pins.get("torch")
    if torch_pin is not None:
        for name in COMPANIONS:
            pin = pins.get(name)
            if pin is not None and pin.label != torch_pin.label:
                problems.append(f"{name}=={pin.version} carries a different label than torch=={torch_pin.version}")
    if target.backend == "cuda" and target.platform == "linux_x86_64" and not any(n.startswith("nvidia-") for n in pins):
        problems.append("no nvidia-* package: a CUDA torch for Linux x86_64 needs its CUDA libraries (was it resolved on another OS?)")
    if target.backend == "rocm" and "pytorch-triton-rocm" not in pins:
        problems.append("pytorch-triton-rocm is missing: a ROCm torch depends on it")
    if needs_setuptools and "setuptools" not in pins:
        problems.append(f"setuptools is not pinned, but torch {target.torch} needs it on Python {target.python} (resolve with --allow-unsafe)")
    return problems


# ----- state -----------------------------------------------------------------------
@dataclass(frozen=True)
class LockState:
    status: str  # fresh | stale | missing | tampered
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


def read_state(lock_path: Path, requirements_in: str | None, target) -> LockState:
    lock_path = Path(lock_path)
    if not lock_path.is_file():
        return LockState("missing", f"{lock_path.name} does not exist yet; run `bundler lock`.", lock_path)
    try:
        text = lock_path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        return LockState("tampered", f"{lock_path.name} cannot be read as text ({error}).", lock_path)
    fields, body = split_lock(text)
    header = parse_header(fields)
    if header is None:
        return LockState("tampered", f"{lock_path.name} has no bundler header: it was written by hand or by another tool.", lock_path)
    if body_hash(body) != header.body_sha256:
        return LockState(
            "tampered",
            f"{lock_path.name} was edited after `bundler lock` wrote it: its requirement or hash lines no longer match the body-sha256 of its header.",
            lock_path,
            header,
        )
    if requirements_in is None:
        return LockState("stale", "requirements.in is missing, so the lock cannot be checked against it.", lock_path, header)
    if header.input_sha256 != input_hash(requirements_in, target):
        changed = [key for key in TARGET_FIELDS if str(header.target.get(key, "")) != str(getattr(target, key))]
        if changed:
            what = ", ".join(f"{key} {header.target.get(key)!r} -> {getattr(target, key)!r}" for key in changed)
            detail = f"bundle.toml [target] changed since the lock was written ({what})."
        else:
            detail = "requirements.in changed since the lock was written."
        return LockState("stale", detail + " Run `bundler lock`.", lock_path, header)
    return LockState("fresh", f"{lock_path.name} matches requirements.in and the Target ({header.describe_target()}).", lock_path, header)


def lock_state(bundle) -> LockState:
    """State of a bundle's lock: "fresh", "stale", "missing" or "tampered", with a detail."""
    requirements = bundle.root / "requirements.in"
    text = requirements.read_text(encoding="utf-8") if requirements.is_file() else None
    return read_state(bundle.lock_path, text, bundle.target)


# ----- verification where the lock runs ----------------------------------------------
def torch_check_code(target) -> str:
    """Python code that imports torch and compares its build with the Target (exit 1 if not)."""
    expected = {"torch": target.torch, "backend": target.backend, "accelerator": target.accelerator}
    return (
        "import json, sys\n"
        f"want = {json.dumps(expected)}\n"
        "import torch\n"
        "got = {'version': torch.__version__, 'cuda': getattr(torch.version, 'cuda', None), 'hip': getattr(torch.version, 'hip', None)}\n"
        "problems = []\n"
        "if torch.__version__.split('+')[0] != want['torch']:\n"
        "    problems.append('torch ' + torch.__version__ + ' is not ' + want['torch'])\n"
        "acc = want['accelerator']\n"
        "if want['backend'] == 'cuda' and not (got['cuda'] or '').startswith(acc):\n"
        "    problems.append('torch.version.cuda is %r, the Target wants CUDA %s' % (got['cuda'], acc))\n"
        "if want['backend'] == 'rocm' and not (got['hip'] or '').startswith(acc):\n"
        "    problems.append('torch.version.hip is %r, the Target wants ROCm %s' % (got['hip'], acc))\n"
        "if want['backend'] == 'cpu' and (got['cuda'] or got['hip']):\n"
        "    problems.append('a CPU Target got a GPU build (cuda=%r, hip=%r)' % (got['cuda'], got['hip']))\n"
        "print(json.dumps({'torch': got, 'problems': problems}))\n"
        "sys.exit(1 if problems else 0)\n"
    )


def verify_lock_commands(lock: str, target, python: str = "python", pip_args: tuple[str, ...] = ()) -> list[list[str]]:
    """The three steps, as argv lists: hashed install, pip check, import torch."""
    install = [python, "-m", "pip", "install", "--require-hashes", "--no-deps", *pip_args, "-r", lock]
    return [install, [python, "-m", "pip", "check"], [python, "-c", torch_check_code(target)]]


def verify_lock_command(lock: str, target, python: str = "python", pip_args: tuple[str, ...] = ()) -> str:
    """The same steps as one shell command (for a Dockerfile RUN or a remote shell)."""
    return " && ".join(shlex.join(step) for step in verify_lock_commands(lock, target, python, pip_args))


@dataclass
class VerifyResult:
    ok: bool
    step: str
    output: str
    torch: dict = field(default_factory=dict)


def verify_lock(lock: Path, target, python: str, pip_args: tuple[str, ...] = (), env: dict | None = None, timeout: int = 1800) -> VerifyResult:
    """Run the verification steps with ``python`` (a venv's interpreter); stop at the first failure."""
    names = ("install", "pip check", "import torch")
    output, stdout = "", ""
    for name, argv in zip(names, verify_lock_commands(str(lock), target, python, pip_args)):
        completed = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=timeout)
        output, stdout = completed.stdout + completed.stderr, completed.stdout
        if completed.returncode != 0:
            return VerifyResult(False, name, output.strip()[-4000:])
    report = next((line for line in reversed(stdout.splitlines()) if line.startswith("{")), "{}")
    return VerifyResult(True, "done", output.strip(), json.loads(report).get("torch", {}))


def ensure_lintless(text: str, target, expected: dict[str, str], needs_setuptools: bool, lock_path: Path) -> None:
    problems = lint_lock(text, target, expected, needs_setuptools)
    if problems:
        listed = "; ".join(problems[:6]) + (f"; and {len(problems) - 6} more" if len(problems) > 6 else "")
        raise LockError(
            f"the lock resolved for {target.describe()} fails its checks, so {lock_path} was not written: {listed}.",
            hint="Check requirements.in for a pin that overrides the Target's build, then run `bundler lock --upgrade`.",
            path=lock_path,
        )
