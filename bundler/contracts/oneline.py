"""A value written into a generated file as one line: every Unicode line break counts.

A header comment (the lock's, a job file's, the sbatch script's, the Dockerfile's), a
README line or a ``.env.local`` value ends where the value holds a line break, and the
rest would be read as the file's own text: a newline in a base image name becomes an
``--extra-index-url`` line of the lock. The breaks are those ``str.splitlines()`` knows:
``\\n \\r \\v \\f \\x1c \\x1d \\x1e \\x85 U+2028 U+2029``; other control characters are
refused too. ``one_line`` returns the value or raises ``NotOneLine`` saying why;
``safe_line`` replaces each such character (for a line that only informs).

Standard library only.
"""

from __future__ import annotations

LINE_BREAKS = frozenset("\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029")


class NotOneLine(ValueError):
    """A value that would not stay on its line."""


def unsafe_character(value: str) -> str | None:
    """The first line break or control character of ``value``, or None."""
    for char in value:
        if char in LINE_BREAKS or char == "\x7f" or (ord(char) < 32 and char != "\t") or 0x80 <= ord(char) < 0xA0:
            return char
    return None


def one_line(value: str) -> str:
    """``value`` when it is one line of printable text; NotOneLine naming the character otherwise."""
    found = unsafe_character(value)
    if found is not None:
        kind = "a line break" if found in LINE_BREAKS else "a control character"
        raise NotOneLine(f"{value!r} holds {kind} ({found!r})")
    return value


def safe_line(value: str, replacement: str = "?") -> str:
    """``value`` with every line break and control character replaced: for informational
    lines (a header comment recording a card name) where a refusal would help nobody."""
    return "".join(replacement if unsafe_character(char) else char for char in value)


def is_one_line(value: str) -> bool:
    return unsafe_character(value) is None
