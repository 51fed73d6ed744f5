"""The shapes of a machine-specific path: the one definition bundler has of them.

`bundler paths` scans projects with these patterns (portability/scan.py adds its own
context rules: a temporary folder counts only where a line writes to it); the lock's
lint and `bundler runs verify` use ``machine_paths`` on their text, temporary folders
always included. Patterns work on bytes; each starts with a literal so that the regex
engine searches it fast.

Shapes: home (``/home/u``, ``/Users/u``, ``/root``), tilde (``~/…``), home-var
(``$HOME``, ``${HOME}``, ``%USERPROFILE%``), home-lookup (``expanduser("~…")``,
``Path.home()``), windows-user (``C:\\Users\\u`` in every spelling), wsl-user
(``/mnt/c/Users/u``), temp-dir (``/tmp``, ``/var/tmp``, ``/dev/shm``, macOS's
``/private/var/folders``) and project-absolute (an absolute path inside the project
being scanned; only when its root is given).
"""

from __future__ import annotations

import re

_USER = rb"[A-Za-z0-9_][\w.~-]*"
_UNIX_TAIL = rb"(?:/[^\s\"'`,;:()<>\[\]{}|*?=\\$]*)?"
_WIN_SEP = rb"(?:\\\\|\\|/)"
_WIN_TAIL = rb"(?:" + _WIN_SEP + rb"[^\s\"'`,;:()<>\[\]{}|*?=$/\\]*)*"
_PATH_TAIL = rb"[^\s\"'`,;:()<>\[\]{}|*?=\\$]*"


def shape_patterns(root_literals: list[bytes]) -> list[tuple[str, re.Pattern[bytes]]]:
    """One pattern per shape, in priority order (the project root before plain home paths).

    Each starts with a literal, so the regex engine searches it fast; one alternation of
    them all would be tried byte by byte, ten times slower. What may precede a match
    (no word, no URL) is checked in Python (``preceded_ok``).
    """
    parts = []
    if root_literals:
        roots = b"|".join(re.escape(r) for r in sorted(set(root_literals), key=len, reverse=True))
        parts.append(rb"(?P<project>(?:" + roots + rb")(?![\w.-])" + _UNIX_TAIL + rb")")
    parts += [
        rb"(?P<wsl>/mnt/[A-Za-z]/[Uu]sers/" + _USER + _UNIX_TAIL + rb")",
        rb"(?P<home>(?:/home/" + _USER + rb"|/Users/" + _USER + rb"|/root(?![\w.-]))" + _UNIX_TAIL + rb")",
        rb"(?P<windows>[A-Za-z]:" + _WIN_SEP + rb"[Uu][Ss][Ee][Rr][Ss]" + _WIN_SEP + _USER + _WIN_TAIL + rb")",
        rb"(?P<temp>(?:/private/var/folders|/var/folders|/private/tmp|/var/tmp|/tmp|/dev/shm)(?![\w.-])" + _UNIX_TAIL + rb")",
        rb"(?P<lookup>expanduser\(\s*[rRuU]?(?P<q>[\"'])~[^\"'\n]*(?P=q)\s*\)|Path\.home\(\))",
        rb"(?P<tilde>~(?:" + _USER + rb")?/" + _PATH_TAIL + rb")",
        rb"(?P<homevar>\$HOME\b|\$\{HOME\}|%USERPROFILE%|%HOMEPATH%|\$env:USERPROFILE\b)"
        + rb"(?:/"
        + _PATH_TAIL
        + rb"|\\[^\s\"'`,;:()<>\[\]{}|*?=$]*)?",
    ]
    patterns = []
    for part in parts:
        pattern = re.compile(part)
        patterns.append((next(iter(pattern.groupindex)), pattern))
    return patterns


def word_byte(byte: int) -> bool:
    return byte >= 0x80 or byte == 0x5F or 0x30 <= byte <= 0x39 or 0x41 <= byte <= 0x5A or 0x61 <= byte <= 0x7A


_PATH_NOT_AFTER = frozenset(b"./~\\$%-")


def preceded_ok(group: str, data: bytes, start: int) -> bool:
    if start == 0:
        return True
    before = data[start - 1]
    if group in ("project", "wsl", "home", "temp"):
        return not word_byte(before) and before not in _PATH_NOT_AFTER
    if group == "windows":
        return not word_byte(before)
    if group == "tilde":
        return before in b"\"' \t\r\n=,["
    return True


GROUP_SHAPES = {
    "project": "project-absolute",
    "wsl": "wsl-user",
    "home": "home",
    "windows": "windows-user",
    "temp": "temp-dir",
    "lookup": "home-lookup",
    "tilde": "tilde",
    "homevar": "home-var",
}


_URL_SCHEME = re.compile(rb"[A-Za-z][A-Za-z0-9+.-]*://")


def inside_url(data: bytes, line_start: int, start: int) -> bool:
    """True when the hit is part of a ``scheme://`` word (a URL, not a path)."""
    word_start = start
    while word_start > line_start and data[word_start - 1 : word_start] not in b" \t\"'`(<[=,":
        word_start -= 1
    return _URL_SCHEME.search(data, word_start, start + 1) is not None


_PATTERNS = shape_patterns([])


def machine_paths(text: str) -> list[tuple[str, str]]:
    """(shape, path) of every machine-specific path in ``text``, URLs left out."""
    data = text.encode("utf-8", errors="replace")
    found = []
    for group, pattern in _PATTERNS:
        for match in pattern.finditer(data):
            start = match.start()
            line_start = data.rfind(b"\n", 0, start) + 1
            if preceded_ok(group, data, start) and not inside_url(data, line_start, start):
                found.append((GROUP_SHAPES[group], match.group(0).decode("utf-8", errors="replace")))
    return found
