"""A reader for the TOML subset bundle.toml is written in, for Pythons without tomllib.

Python 3.10 images have neither tomllib (3.11+) nor, usually, tomli. bundle.toml uses
only comments, [tables], [[arrays of tables]], and key = value with basic or literal
strings, integers, floats, booleans and one-line arrays of those; anything else raises
ValueError naming the line, which the caller reports like any TOML error.
"""

from __future__ import annotations

import ast
import re

_KEY = r"[A-Za-z0-9_-]+"
_TABLE = re.compile(rf"^\[\s*({_KEY}(?:\s*\.\s*{_KEY})*)\s*\]$")
_ARRAY_TABLE = re.compile(rf"^\[\[\s*({_KEY})\s*\]\]$")
_PAIR = re.compile(rf"^({_KEY})\s*=\s*(.+)$")
_SCALAR = re.compile(r'"(?:[^"\\]|\\.)*"|\'[^\']*\'|[^,\s\]]+')


def loads(text: str) -> dict:
    document: dict = {}
    current = document
    for number, raw in enumerate(text.splitlines(), start=1):
        line = _strip_comment(raw).strip()
        if not line:
            continue
        if match := _ARRAY_TABLE.match(line):
            current = {}
            document.setdefault(match.group(1), []).append(current)
        elif match := _TABLE.match(line):
            current = document
            for part in (p.strip() for p in match.group(1).split(".")):
                current = current.setdefault(part, {})
        elif match := _PAIR.match(line):
            current[match.group(1)] = _value(match.group(2).strip(), number)
        else:
            raise ValueError(f"line {number}: {raw.strip()!r} is outside the TOML subset this reader knows")
    return document


def _strip_comment(line: str) -> str:
    quote = None
    for index, char in enumerate(line):
        if quote:
            if char == quote and line[index - 1] != "\\":
                quote = None
        elif char in "\"'":
            quote = char
        elif char == "#":
            return line[:index]
    return line


def _value(text: str, number: int):
    if text.startswith("["):
        if not text.endswith("]"):
            raise ValueError(f"line {number}: arrays must close on the same line")
        return [_scalar(item, number) for item in _SCALAR.findall(text[1:-1])]
    return _scalar(text, number)


def _scalar(text: str, number: int):
    if text in ("true", "false"):
        return text == "true"
    if text[:1] == "'" and text[-1:] == "'":
        return text[1:-1]
    try:
        value = ast.literal_eval(text.replace("_", "") if text[:1] not in "\"'" else text)
    except (ValueError, SyntaxError):
        raise ValueError(f"line {number}: cannot read the value {text!r}") from None
    if not isinstance(value, (str, int, float)):
        raise ValueError(f"line {number}: cannot read the value {text!r}")
    return value
