# Generated from bundler/contracts/lockformat.py by `python -m bundler.contracts.generate`: do not edit.
"""The lock's format (requirements-rebuild.txt), read and written one way by every reader.

- **Logical lines**, as pip reads a requirements file: a line ending in ``\\`` continues on
  the next; then a comment (``#`` at the start or after whitespace) is dropped to the end
  of its logical line. Each logical line keeps the number of its first physical line.
- **A pin** is ``name[extras]==version[ ; marker]`` followed by its hashes, each
  ``--hash=sha256:<64 hex>`` (or ``--hash sha256:…``). **sha256 only**: bundler writes
  sha256, the wheel cache addresses files by it and the image installs with it, so a hash
  of another algorithm (sha384, sha512) is refused by every reader, naming the line.
- **The header** is the leading block of ``# key: value`` comment lines (``HEADER_KEYS``),
  each value one line (``oneline.py``: a line break would end the comment and make the
  rest a line pip reads).
- **Rendering** a pin is the one way it is written (by `bundler lock` and by the build's
  rewrite of a source-built pin): the requirement, then one indented ``--hash`` per line.

Standard library only: copied into diagnostics/ (generated, see ``generate.py``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from .oneline import one_line

HASH_ALGORITHMS = ("sha256",)
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
_HEADER_LINE = re.compile(r"^# ([a-z0-9-]+): (.*)$")
_COMMENT = re.compile(r"(^|\s+)#.*$")
_NAME = r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?"
_PIN = re.compile(
    rf"^(?P<name>{_NAME})\s*(?:\[(?P<extras>[^\]]*)\])?\s*"
    r"(?:==\s*(?P<version>[A-Za-z0-9.+!_*-]+)|@\s*(?P<url>\S+))\s*(?:;\s*(?P<marker>.*?))?\s*$"
)
_HASH = re.compile(r"^(?P<algorithm>[A-Za-z0-9]+):(?P<digest>[0-9a-f]+)$")
INDEX_OPTIONS = ("--index-url", "-i", "--extra-index-url")


class LockFormatError(ValueError):
    """A line of a lock that is not in the lock's format."""

    def __init__(self, line: int, text: str, why: str) -> None:
        super().__init__(f"line {line}: {why}: {text[:120]!r}")
        self.line, self.text, self.why = line, text, why


@dataclass(frozen=True)
class LogicalLine:
    number: int  # of its first physical line
    text: str


def logical_lines(text: str) -> list[LogicalLine]:
    """The logical lines of a requirements file, blank ones left out."""
    joined: list[LogicalLine] = []
    parts: list[str] = []
    start = 0
    for number, raw in enumerate(text.splitlines(), 1):
        if not parts:
            start = number
        if raw.endswith("\\") and not _COMMENT.match(raw):
            parts.append(raw[:-1])
            continue
        parts.append(raw)
        line = _COMMENT.sub("", "".join(parts)).strip()
        parts = []
        if line:
            joined.append(LogicalLine(start, line))
    if parts:
        line = _COMMENT.sub("", "".join(parts)).strip()
        if line:
            joined.append(LogicalLine(start, line))
    return joined


def split_header(text: str) -> tuple[dict[str, str], str]:
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


def render_header(title: list[str], values: dict[str, str]) -> str:
    """The header's lines: the title comments, then ``# key: value`` (NotOneLine for a value that is not one line)."""
    return "\n".join([*(f"# {one_line(line)}" for line in title), *(f"# {key}: {one_line(value)}" for key, value in values.items())]) + "\n"


def canonical_name(name: str) -> str:
    """PEP 503: lower case, runs of ``-_.`` as one ``-``."""
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass(frozen=True)
class Pin:
    name: str  # canonical
    version: str  # "" for a direct reference (name @ url)
    hashes: tuple[str, ...]  # sha256 hex digests
    line: int = 0
    text: str = ""  # the logical line as read
    extras: tuple[str, ...] = ()
    marker: str = ""
    url: str = ""
    given_name: str = ""  # as written (the rewrite keeps it)

    @property
    def label(self) -> str:
        """The local version label (``cu128`` of ``2.6.0+cu128``)."""
        return self.version.partition("+")[2]

    @property
    def requirement(self) -> str:
        """The pin without its hashes, as written back."""
        extras = f"[{','.join(self.extras)}]" if self.extras else ""
        head = f"{self.given_name or self.name}{extras}"
        head += f" @ {self.url}" if self.url else f"=={self.version}"
        return f"{head} ; {self.marker}" if self.marker else head


def is_option(text: str) -> bool:
    return text.startswith("-")


def parse_pin(text: str, number: int = 0) -> Pin:
    """One logical requirement line of a lock; LockFormatError naming what is wrong."""
    words = text.split()
    first_option = next((i for i, word in enumerate(words) if word.startswith("-")), len(words))
    requirement, options = " ".join(words[:first_option]), words[first_option:]
    match = _PIN.match(requirement)
    if match is None:
        raise LockFormatError(number, text, "not a pinned requirement (name==version)")
    hashes = []
    position = 0
    while position < len(options):
        option = options[position]
        if option == "--hash" and position + 1 < len(options):
            value, position = options[position + 1], position + 2
        elif option.startswith("--hash="):
            value, position = option[len("--hash=") :], position + 1
        else:
            raise LockFormatError(number, text, f"{option} is not an option of a pinned requirement")
        hashes.append(_digest(number, text, value))
    extras = tuple(e.strip() for e in (match.group("extras") or "").split(",") if e.strip())
    return Pin(
        name=canonical_name(match.group("name")),
        version=match.group("version") or "",
        hashes=tuple(hashes),
        line=number,
        text=text,
        extras=extras,
        marker=(match.group("marker") or "").strip(),
        url=match.group("url") or "",
        given_name=match.group("name"),
    )


def _digest(number: int, text: str, value: str) -> str:
    match = _HASH.match(value)
    if match is None:
        raise LockFormatError(number, text, f"malformed hash {value[:40]!r}")
    algorithm, digest = match.group("algorithm"), match.group("digest")
    if algorithm not in HASH_ALGORITHMS:
        raise LockFormatError(number, text, f"a {algorithm} hash: a lock's hashes are sha256 (what bundler writes and checks)")
    if len(digest) != 64:
        raise LockFormatError(number, text, f"a sha256 hash of {len(digest)} hex digits, not 64")
    return digest


@dataclass(frozen=True)
class LockBody:
    options: tuple[LogicalLine, ...]  # index and other option lines, in order
    pins: tuple[Pin, ...]

    @property
    def index_urls(self) -> list[str]:
        return [option_value(line.text)[1] for line in self.options if option_value(line.text)[0] in INDEX_OPTIONS]


def option_value(text: str) -> tuple[str, str]:
    """('--index-url', 'https://…') of ``--index-url URL``, ``--index-url=URL`` or ``-iURL``."""
    head, _, rest = text.partition(" ")
    if head.startswith("--") and "=" in head:
        name, _, value = head.partition("=")
        return name, value.strip()
    if head.startswith("-i") and len(head) > 2:
        return "-i", head[2:]
    return head, rest.strip()


def parse_body(text: str) -> LockBody:
    """The option lines and pins of a lock's text (the header's comments are no lines)."""
    options, pins = [], []
    for line in logical_lines(text):
        if is_option(line.text):
            if option_value(line.text)[0] == "--hash":  # a comment line ended the requirement it belonged to
                raise LockFormatError(line.number, line.text, "a --hash line that belongs to no requirement")
            options.append(line)
        else:
            pins.append(parse_pin(line.text, line.number))
    return LockBody(tuple(options), tuple(pins))


def render_pin(pin: Pin) -> str:
    """The pin as the lock writes it: the requirement, then one ``--hash`` per continued line."""
    return with_hashes(pin.requirement, pin.hashes)


def with_hashes(requirement: str, digests: tuple[str, ...] | list[str]) -> str:
    """A requirement line with its sha256 hashes, one per continued line."""
    return " \\\n    ".join([requirement.rstrip(), *(f"--hash=sha256:{digest}" for digest in digests)])


def unhashed_pin(line: str) -> Pin | None:
    """The pin a resolver's output line holds (``name==version[ ; marker]``, no hashes yet), else None."""
    if not line or line[0].isspace() or line.startswith(("#", "-")):
        return None
    try:
        pin = parse_pin(line.strip())
    except LockFormatError:
        return None
    return pin if pin.version and not pin.hashes else None


def rewrite_pin(pin: Pin, *, version: str | None = None, hashes: tuple[str, ...] | None = None) -> str:
    """The pin with another version or other hashes, its name, extras and marker kept."""
    return render_pin(replace(pin, version=pin.version if version is None else version, hashes=pin.hashes if hashes is None else hashes))


def render_body(options: list[str], pins: list[Pin]) -> str:
    """Option lines, a blank line, then the pins."""
    return "\n".join(options) + "\n\n" + "\n".join(render_pin(pin) for pin in pins) + "\n"
