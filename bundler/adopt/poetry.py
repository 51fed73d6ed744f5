"""Poetry's version constraints in PEP 440: ``^1.2`` is ``>=1.2,<2.0``, ``~1.2.3`` is ``>=1.2.3,<1.3.0``.

A local label (``^2.1.0+cu121``) cannot stand in a PEP 440 range: it is split off and
returned apart, for the Target. An alternative (``^1.0 || ^2.0``) has no PEP 440 form and
is refused with the constraint named.
"""

from __future__ import annotations

import re

_VERSION = re.compile(r"^(\d+(?:\.\d+)*)(\+[A-Za-z0-9.]+)?$")
_OPERATOR = re.compile(r"^(===|==|!=|~=|<=|>=|<|>)\s*(\S+)$")


class NotTranslatable(ValueError):
    """A constraint with no PEP 440 form."""


def translate(constraint: str) -> tuple[str, str]:
    """(PEP 440 specifier, local label) of a Poetry constraint; "" for any version."""
    text = constraint.strip()
    if "||" in text or "|" in text:
        raise NotTranslatable(f"{constraint!r} is an alternative of ranges, which PEP 440 cannot say")
    if text in ("", "*"):
        return "", ""
    parts, labels = [], []
    for piece in re.split(r"\s*,\s*|\s+(?=[<>=!~^])", text):
        if not piece:
            continue
        specifier, label = _one(piece, constraint)
        parts += [specifier] if specifier else []
        labels += [label] if label else []
    return ",".join(parts), labels[0] if labels else ""


def _one(piece: str, constraint: str) -> tuple[str, str]:
    if piece == "*":
        return "", ""
    if piece[0] in "^~" and not piece.startswith("~="):
        version, label = _version(piece[1:].strip(), constraint)
        upper = _caret_upper(version) if piece[0] == "^" else _tilde_upper(version)
        return f">={version},<{upper}", label
    match = _OPERATOR.match(piece)
    if match:
        operator, value = match.groups()
        if value.endswith(".*"):
            return f"{operator}{value}", ""
        version, label = _version(value, constraint)
        return f"{operator}{version}", label
    if piece.endswith(".*"):
        return f"=={piece}", ""
    version, label = _version(piece, constraint)
    return f"=={version}", label


def _version(text: str, constraint: str) -> tuple[str, str]:
    match = _VERSION.match(text)
    if not match:
        raise NotTranslatable(f"{constraint!r}: {text!r} is not a version bundler can read")
    return match.group(1), (match.group(2) or "")[1:]


def _caret_upper(version: str) -> str:
    """The first release a caret excludes: the leftmost non-zero part goes up."""
    parts = [int(p) for p in version.split(".")]
    for index, part in enumerate(parts):
        if part != 0 or index == len(parts) - 1:
            upper = parts[:index] + [part + 1]
            return ".".join(str(p) for p in upper + [0] * (max(len(parts), 2) - len(upper)))
    return version  # unreachable: the loop returns at the last part


def _tilde_upper(version: str) -> str:
    parts = [int(p) for p in version.split(".")]
    if len(parts) == 1:
        return f"{parts[0] + 1}.0"
    return f"{parts[0]}.{parts[1] + 1}.0" if len(parts) > 2 else f"{parts[0]}.{parts[1] + 1}"
