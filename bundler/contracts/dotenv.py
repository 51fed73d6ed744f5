"""One ``NAME=value`` line of a ``.env.local``, read back as the exact value by every reader.

The readers are bash (``set -a; . ./.env.local; set +a``), python-dotenv's rules, the helper
``_bundle_paths.py`` and the shell block of a rewritten script (both strip one pair of
quotes and unescape nothing). So a value is written bare when it holds only characters no
reader treats specially (a leading ``~/`` or ``$HOME``, which bash and the helper expand,
stays bare so that it still means the home; a ``$`` before a name elsewhere is refused, since
the helper would expand it and a quoted line would not), else in single quotes (literal for all of
them), else, when it holds an apostrophe, in double quotes as long as it holds none of
``" $ ` \\`` (which bash and dotenv would read inside double quotes). Anything else — a line
break of any kind, a control character, or both kinds of quote with a ``$`` — cannot be
written so that all of them agree, and ``assignment`` raises ``NotWritable`` saying why.

Standard library only.
"""

from __future__ import annotations

import re

from .oneline import LINE_BREAKS, unsafe_character

NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_BARE = re.compile(r"[A-Za-z0-9_./:@%+,-]*")
_HOME_PREFIXES = ("${HOME}", "$HOME", "~")
_VARIABLE = re.compile(r"\$[A-Za-z_{]")
_DOUBLE_QUOTED_SPECIAL = frozenset('"$`\\')


class NotWritable(ValueError):
    """A name or value that a .env.local line cannot carry exactly."""


def assignment(name: str, value: str) -> str:
    """The line ``NAME=value`` (no newline) that bash and dotenv readers read back as ``value``."""
    if not NAME.fullmatch(name):
        raise NotWritable(f"{name!r} is not a shell variable name (letters, digits and _, not starting with a digit)")
    found = unsafe_character(value)
    if found is not None:
        kind = "a line break" if found in LINE_BREAKS else "a control character"
        raise NotWritable(f"the value of {name} holds {kind} ({found!r}), which no .env.local line can carry")
    prefix = _home_prefix(value)
    rest = value[len(prefix) :]
    if _VARIABLE.search(rest):
        raise NotWritable(f"the value of {name} holds a $ before a name, which the helper would expand and a quoted line would not")
    if _BARE.fullmatch(rest):
        return f"{name}={value}"
    if prefix:
        raise NotWritable(
            f"the value of {name} starts at the home folder but holds characters that need quoting, and a quoted home is not expanded"
        )
    if "'" not in value:
        return f"{name}='{value}'"
    if not _DOUBLE_QUOTED_SPECIAL & set(value):
        return f'{name}="{value}"'
    raise NotWritable(
        f'the value of {name} holds an apostrophe together with one of " $ ` \\, which no quoting reads back alike in bash and dotenv'
    )


def writable(name: str, value: str) -> str | None:
    """Why ``assignment(name, value)`` would refuse, or None."""
    try:
        assignment(name, value)
    except NotWritable as error:
        return str(error)
    return None


def _home_prefix(value: str) -> str:
    """The leading ``~``, ``$HOME`` or ``${HOME}`` that every reader expands to the home folder, or ""."""
    for prefix in _HOME_PREFIXES:
        rest = value[len(prefix) :]
        if value.startswith(prefix) and (rest == "" or rest.startswith("/")):
            return prefix
    return ""
