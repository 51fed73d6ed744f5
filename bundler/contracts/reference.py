"""An image reference as registries read it: ``[host[:port]/]name[/name…][:tag][@sha256:digest]``.

One grammar for every command that takes one (`bundler new --set base_image=`, `bundler
build --tag/--push`, `bundler job --image`): ASCII only, a lower-case name, a tag of at most
128 characters, a sha256 digest, at most 255 characters of name. ``ReferenceError`` says
what is wrong; the caller names the flag or key the value came from.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
_DOMAIN = rf"(?:{_LABEL}(?:\.{_LABEL})*(?::[0-9]+)?)"
REFERENCE_RE = re.compile(
    rf"(?P<repository>(?:{_DOMAIN}/)?{_COMPONENT}(?:/{_COMPONENT})*)"
    r"(?::(?P<tag>[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}))?"
    r"(?:@(?P<digest>sha256:[0-9a-f]{64}))?",
    re.ASCII,
)
MAX_NAME = 255


class ReferenceError(ValueError):
    """Not an image reference; the message says why (the caller adds where it came from)."""


@dataclass(frozen=True)
class Reference:
    repository: str  # host/name, without tag or digest
    tag: str  # "" when none is given
    digest: str  # "sha256:…" or ""


def parse_reference(text: str) -> Reference:
    """``text`` as a Reference; ReferenceError when registries would refuse it."""
    match = REFERENCE_RE.fullmatch(text)
    if match is None:
        raise ReferenceError(_why(text))
    if len(match.group("repository")) > MAX_NAME:
        raise ReferenceError(f"its name is longer than {MAX_NAME} characters")
    return Reference(match.group("repository"), match.group("tag") or "", match.group("digest") or "")


def registry_host(reference: str) -> str:
    """The registry a reference names: its first part when more follows and that part has a dot, a port or is
    localhost (``registry.example.com:5000/team/x:1`` -> ``registry.example.com:5000``); "" for Docker Hub's names."""
    first = reference.split("/", 1)[0]
    return first if "/" in reference and ("." in first or ":" in first or first == "localhost") else ""


def _why(text: str) -> str:
    if not text:
        return "it is empty"
    if not text.isascii():
        return "it holds a character outside ASCII"
    if any(char.isspace() or not char.isprintable() for char in text):
        return "it holds a space or a control character"
    if text.split("@")[0].rsplit(":", 1)[0].split("/")[-1] != text.split("@")[0].rsplit(":", 1)[0].split("/")[-1].lower():
        return "its name is not lower case"
    return "it does not follow HOST[:PORT]/NAME[:TAG][@sha256:DIGEST]"
