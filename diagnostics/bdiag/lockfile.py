"""Read a pip-compile lock (``name==version \\`` + ``--hash`` lines) without any third-party code."""

from __future__ import annotations

import os
import platform
import re
import sys
from dataclasses import dataclass, field


class LockCorrupt(ValueError):
    def __init__(self, path: str, line: int, text: str, why: str) -> None:
        super().__init__(f"{path}, line {line}: {why}: {text[:120]!r}")
        self.path, self.line, self.text, self.why = path, line, text, why


@dataclass
class Pin:
    name: str  # normalized (PEP 503)
    version: str | None  # None for a direct reference (name @ url)
    marker: str = ""
    hashes: list = field(default_factory=list)
    line: int = 0


@dataclass
class Lock:
    path: str
    pins: dict  # normalized name -> Pin
    index_urls: list
    torch_index: str = "pytorch"  # the header's `# torch-index:`: pytorch (labelled +cu128 wheels) or pypi (unlabelled)


_REQ = re.compile(
    r"^(?P<name>[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)\s*(?:\[[^\]]*\])?\s*"
    r"(?:==\s*(?P<version>[A-Za-z0-9.+!_-]+)|@\s*(?P<url>\S+))\s*(?:;\s*(?P<marker>.*))?$"
)
_HASH = re.compile(r"^--hash[=\s]+(sha256|sha384|sha512):[0-9a-f]{64,128}$")
_OPTIONS_WITH_VALUE = (
    "--index-url",
    "-i",
    "--extra-index-url",
    "--find-links",
    "-f",
    "--trusted-host",
    "--no-binary",
    "--only-binary",
    "-c",
    "--constraint",
    "-r",
    "--requirement",
)
_FLAG_OPTIONS = ("--prefer-binary", "--require-hashes", "--no-index", "--pre")
_TORCH_INDEX = re.compile(r"^# torch-index: (\S+)\s*$", re.MULTILINE)


def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def read_lock(path: str) -> Lock:
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise LockCorrupt(path, 1, repr(raw[:40]), f"not UTF-8 text ({error.reason})") from None
    if "\x00" in text:
        raise LockCorrupt(path, 1, "", "contains NUL bytes")
    pins: dict = {}
    index_urls: list = []
    for number, line in _logical_lines(text):
        tokens = line.split()
        head = tokens[0]
        if head.startswith("-"):
            option = head.split("=", 1)[0]
            if option in ("--index-url", "-i", "--extra-index-url"):
                index_urls.append(head.split("=", 1)[1] if "=" in head else (tokens[1] if len(tokens) > 1 else ""))
            elif option not in _OPTIONS_WITH_VALUE + _FLAG_OPTIONS + ("-e", "--editable"):
                raise LockCorrupt(path, number, line, f"unknown option {option}")
            continue
        requirement, hashes = _split_hashes(path, number, line)
        match = _REQ.match(requirement)
        if not match:
            raise LockCorrupt(path, number, line, "not a pinned requirement (name==version)")
        pin = Pin(normalize(match.group("name")), match.group("version"), (match.group("marker") or "").strip(), hashes, number)
        if pin.name in pins and marker_applies(pins[pin.name].marker) is not False and marker_applies(pin.marker) is not False:
            raise LockCorrupt(path, number, line, f"{pin.name} is pinned twice")
        if pin.name not in pins or marker_applies(pin.marker) is not False:
            pins[pin.name] = pin
    source = _TORCH_INDEX.search(text)
    return Lock(path=path, pins=pins, index_urls=index_urls, torch_index=source.group(1) if source else "pytorch")


def _logical_lines(text: str):
    """(first line number, joined text) with comments dropped and backslash continuations joined."""
    buffer, start = "", 0
    for number, raw in enumerate(text.splitlines(), 1):
        line = re.sub(r"(^|\s)#.*$", "", raw).rstrip()
        if not buffer:
            start = number
        if line.endswith("\\"):
            buffer += line[:-1] + " "
            continue
        buffer += line
        if buffer.strip():
            yield start, buffer.strip()
        buffer = ""
    if buffer.strip():
        yield start, buffer.strip()


def _split_hashes(path: str, number: int, line: str) -> tuple[str, list]:
    parts = re.split(r"\s+(?=--hash)", line)
    hashes = []
    for part in parts[1:]:
        part = part.strip()
        if not _HASH.match(part):
            raise LockCorrupt(path, number, line, f"malformed hash {part[:40]!r}")
        hashes.append(part.split(":", 1)[1])
    return parts[0].strip(), hashes


# --- environment markers: a small evaluator for what pip-compile writes --------------------


def _marker_env() -> dict:
    return {
        "python_version": "{}.{}".format(*sys.version_info[:2]),
        "python_full_version": platform.python_version(),
        "sys_platform": sys.platform,
        "platform_system": platform.system(),
        "platform_machine": platform.machine(),
        "os_name": os.name,
        "implementation_name": sys.implementation.name,
        "platform_python_implementation": platform.python_implementation(),
        "extra": "",
    }


_TOKEN = re.compile(r"\s*(\(|\)|not in|===|==|!=|<=|>=|~=|<|>|in|and|or|'[^']*'|\"[^\"]*\"|[A-Za-z_][A-Za-z0-9_.]*)")


def marker_applies(marker: str) -> bool | None:
    """True/False for a marker pip-compile writes; None when it cannot be evaluated here."""
    if not marker:
        return True
    tokens, position = [], 0
    while position < len(marker):
        match = _TOKEN.match(marker, position)
        if not match or not match.group(1):
            return None
        tokens.append(match.group(1))
        position = match.end()
        if marker[position:].strip() == "":
            break
    try:
        value, rest = _or(tokens, _marker_env())
    except (IndexError, KeyError, ValueError):
        return None
    return value if not rest else None


def _or(tokens, env):
    value, tokens = _and(tokens, env)
    while tokens and tokens[0] == "or":
        right, tokens = _and(tokens[1:], env)
        value = value or right
    return value, tokens


def _and(tokens, env):
    value, tokens = _atom(tokens, env)
    while tokens and tokens[0] == "and":
        right, tokens = _atom(tokens[1:], env)
        value = value and right
    return value, tokens


def _atom(tokens, env):
    if tokens[0] == "(":
        value, rest = _or(tokens[1:], env)
        if not rest or rest[0] != ")":
            raise ValueError("unbalanced parenthesis")
        return value, rest[1:]
    left, op, right = tokens[0], tokens[1], tokens[2]
    return _compare(_value(left, env), op, _value(right, env)), tokens[3:]


def _value(token: str, env: dict) -> str:
    if token[0] in "'\"":
        return token[1:-1]
    return env[token]


def _compare(left: str, op: str, right: str) -> bool:
    if op == "in":
        return left in right
    if op == "not in":
        return left not in right
    if re.fullmatch(r"[\d.]+", left) and re.fullmatch(r"[\d.]+", right):
        a, b = tuple(map(int, left.split("."))), tuple(map(int, right.split(".")))
        width = max(len(a), len(b))
        a, b = a + (0,) * (width - len(a)), b + (0,) * (width - len(b))
    else:
        a, b = left, right  # type: ignore[assignment]  # text against text, numbers against numbers
    if op in ("==", "==="):
        return a == b
    if op == "!=":
        return a != b
    if op == "~=":
        return a >= b
    return {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]


# --- versions: the part of PEP 440 equality a lock check needs ----------------------------


def same_version(installed: str, pinned: str) -> bool:
    """Equal releases (1.0 == 1.0.0), equal pre/post/dev parts, and the same local label (+cu128)."""
    return _version_key(installed) == _version_key(pinned)


def _version_key(version: str) -> tuple:
    version = version.strip().lower().lstrip("v")
    public, _, local = version.partition("+")
    match = re.match(r"^(?:(\d+)!)?(\d+(?:\.\d+)*)(.*)$", public)
    if not match:
        return (version,)
    release = [int(part) for part in match.group(2).split(".")]
    while len(release) > 1 and release[-1] == 0:
        release.pop()
    suffix = re.sub(r"[-_.]", "", match.group(3))
    suffix = re.sub(r"^(alpha|a)", "a", re.sub(r"^(beta|b)", "b", re.sub(r"^(c|rc|pre|preview)", "rc", suffix)))
    return (int(match.group(1) or 0), tuple(release), suffix, re.sub(r"[-_]", ".", local))
