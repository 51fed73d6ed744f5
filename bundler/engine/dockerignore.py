"""Docker's `.dockerignore` matching, as the Docker CLI does it (moby's patternmatcher).

- A pattern is cleaned as a path (``./a//b/`` is ``a/b``, a leading ``/`` dropped) and
  matched against a path relative to the context's root, ``/``-separated.
- ``*`` is any run of characters but ``/``, ``?`` one such character, ``[...]`` a class
  (``[!...]`` its complement), ``\\`` makes the next character literal; ``**`` is any
  number of folders (``**/`` may match none), and a trailing ``**`` anything at all.
- A pattern that matches a folder matches everything under it.
- ``!pattern`` re-includes; the last pattern that matches decides.
- A folder that is excluded is not walked into unless some ``!`` pattern starts with its
  path (as the CLI does: ``!**/keep`` does not reach into an excluded folder).

Standard library only (start-up stays light); the suite compares it with docker-py's.
"""

from __future__ import annotations

import functools
import os
import posixpath
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

_SPECIAL = set(".+()|{}$^")


@dataclass(frozen=True)
class Pattern:
    text: str  # cleaned
    exclusion: bool  # a ``!`` pattern: re-includes
    regex: re.Pattern[str]


def _clean(text: str) -> str:
    cleaned = posixpath.normpath(text) if text else ""
    return cleaned[1:] if len(cleaned) > 1 and cleaned.startswith("/") else cleaned


def _translate(pattern: str) -> str:
    """The pattern as a regular expression of a whole path."""
    out, index = ["^"], 0
    while index < len(pattern):
        char = pattern[index]
        index += 1
        if char == "*" and pattern[index : index + 1] == "*":
            index += 1
            if pattern[index : index + 1] == "/":
                index += 1
            out.append(".*" if index >= len(pattern) else "(.*/)?")
        elif char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "\\" and index < len(pattern):
            out.append(re.escape(pattern[index]))
            index += 1
        elif char == "[":
            end = pattern.find("]", index + 1)
            if end == -1:
                out.append(re.escape(char))
                continue
            body = pattern[index:end]
            out.append("[" + ("^" + body[1:] if body.startswith(("!", "^")) else body).replace("\\", "\\\\") + "]")
            index = end + 1
        else:
            out.append("\\" + char if char in _SPECIAL else re.escape(char) if char == "\\" else char)
    return "".join(out) + "$"


def compile_patterns(patterns: Sequence[str]) -> tuple[Pattern, ...]:
    compiled = []
    for raw in patterns:
        text = raw.strip()
        exclusion = text.startswith("!")
        text = _clean(text[1:].strip() if exclusion else text)
        if text and text != ".":
            compiled.append(Pattern(text, exclusion, re.compile(_translate(text))))
    return tuple(compiled)


def _matches(patterns: tuple[Pattern, ...], path: str) -> bool:
    """Whether the last pattern matching ``path`` or a folder above it excludes it."""
    parts = path.split("/")
    parents = ["/".join(parts[:end]) for end in range(1, len(parts))]
    matched = False
    for pattern in patterns:
        if pattern.exclusion != matched:
            continue  # an exclusion matters only once matched, a pattern only until then
        if pattern.regex.match(path) or any(pattern.regex.match(parent) for parent in parents):
            matched = not pattern.exclusion
    return matched


def matcher(patterns: Sequence[str]) -> Callable[[str], bool]:
    """Whether one path (relative, posix) is excluded by the patterns; the last matching pattern wins."""
    return _compiled(tuple(patterns))


@functools.lru_cache(maxsize=16)
def _compiled(patterns: tuple[str, ...]) -> Callable[[str], bool]:  # a project's files are matched against the same few lists
    return functools.partial(_matches, compile_patterns(patterns))


def kept_paths(root: str, patterns: Sequence[str], *, ignore_file: str) -> set[str]:
    """The relative paths (files and folders) under ``root`` that the patterns keep in a context (``ignore_file`` itself kept)."""
    compiled = compile_patterns([*patterns, f"!{ignore_file}"])
    exceptions = [pattern.text + "/" for pattern in compiled if pattern.exclusion]
    kept: set[str] = set()
    for folder, dirs, files in os.walk(root):
        base = os.path.relpath(folder, root).replace(os.sep, "/")
        prefix = "" if base == "." else f"{base}/"
        walked = []
        for name in dirs:
            relative = prefix + name
            excluded = _matches(compiled, relative)
            if not excluded:
                kept.add(relative)
            if not excluded or any(text.startswith(relative + "/") for text in exceptions):
                walked.append(name)
        dirs[:] = walked
        kept.update(prefix + name for name in files if not _matches(compiled, prefix + name))
    return kept
