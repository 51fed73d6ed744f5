"""A reader for the TOML subset bundler writes, for Pythons without tomllib.

Python 3.10 images have neither tomllib (3.11+) nor, usually, tomli. bundle.toml,
plan.toml and catalog.toml use only comments, [tables] and [[arrays of tables]] whose
keys may be quoted (`[cards."RTX 4090"]`), and key = value with basic or literal
strings, integers, floats, booleans, one-line arrays of those and one-line inline
tables (`price = { 3 = "47.14", 7 = "110" }`). Anything else, and a key or table
defined twice, raises ValueError naming the line, which the caller reports like any
TOML error.
"""

from __future__ import annotations

import ast
import re

_BARE = r"[A-Za-z0-9_-]+"
_KEY = rf'(?:{_BARE}|"(?:[^"\\]|\\.)*"|\'[^\']*\')'
_PATH = rf"{_KEY}(?:\s*\.\s*{_KEY})*"
_TABLE = re.compile(rf"^\[\s*({_PATH})\s*\]$")
_ARRAY_TABLE = re.compile(rf"^\[\[\s*({_PATH})\s*\]\]$")
_PAIR = re.compile(rf"^({_KEY})\s*=\s*(.+)$")
_KEY_PART = re.compile(_KEY)
_SCALAR = re.compile(r'"(?:[^"\\]|\\.)*"|\'[^\']*\'|[^,\s\]]+')
_INLINE_PAIR = re.compile(rf'\s*({_KEY})\s*=\s*("(?:[^"\\]|\\.)*"|\'[^\']*\'|[^,}}]+?)\s*(?:,|$)')


def loads(text: str) -> dict:
    document: dict = {}
    current, defined = document, set()
    for number, raw in enumerate(text.splitlines(), start=1):
        line = _strip_comment(raw).strip()
        if not line:
            continue
        if match := _ARRAY_TABLE.match(line):
            *parents, last = _keys(match.group(1), number)
            holder = _descend(document, parents, number)
            array = holder.setdefault(last, [])
            if not isinstance(array, list):
                raise ValueError(f"line {number}: [[{match.group(1)}]] reuses the name of a table")
            current = {}
            array.append(current)
        elif match := _TABLE.match(line):
            path = tuple(_keys(match.group(1), number))
            if path in defined:
                raise ValueError(f"line {number}: table [{match.group(1)}] is defined twice")
            defined.add(path)
            current = _descend(document, list(path), number)
        elif match := _PAIR.match(line):
            key = _unquote(match.group(1), number)
            if key in current:
                raise ValueError(f"line {number}: key {key!r} is defined twice")
            current[key] = _value(match.group(2).strip(), number)
        else:
            raise ValueError(f"line {number}: {raw.strip()!r} is outside the TOML subset this reader knows")
    return document


def _keys(path: str, number: int) -> list:
    return [_unquote(part, number) for part in _KEY_PART.findall(path)]


def _descend(table: dict, keys: list, number: int) -> dict:
    for key in keys:
        table = table.setdefault(key, {})
        if isinstance(table, list):
            table = table[-1]
        if not isinstance(table, dict):
            raise ValueError(f"line {number}: {key!r} is already a value, not a table")
    return table


def _unquote(key: str, number: int) -> str:
    if key[:1] in "\"'":
        return _scalar(key, number)
    return key


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
    if text.startswith("{"):
        return _inline_table(text, number)
    return _scalar(text, number)


def _inline_table(text: str, number: int) -> dict:
    if not text.endswith("}"):
        raise ValueError(f"line {number}: inline tables must close on the same line")
    body, table, position = text[1:-1].strip(), {}, 0
    while position < len(body):
        match = _INLINE_PAIR.match(body, position)
        if not match:
            raise ValueError(f"line {number}: cannot read the inline table {text!r}")
        key = _unquote(match.group(1), number)
        if key in table:
            raise ValueError(f"line {number}: key {key!r} is defined twice")
        table[key] = _scalar(match.group(2).strip(), number)
        position = match.end()
    return table


def _scalar(text: str, number: int):
    if text in ("true", "false"):
        return text == "true"
    if text[:1] == "'" and text[-1:] == "'" and len(text) > 1:
        return text[1:-1]
    try:
        value = ast.literal_eval(text.replace("_", "") if text[:1] not in "\"'" else text)
    except (ValueError, SyntaxError):
        raise ValueError(f"line {number}: cannot read the value {text!r}") from None
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise ValueError(f"line {number}: cannot read the value {text!r}")
    return value
