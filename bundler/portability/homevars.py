"""A home lookup kept in a Python variable, followed to where the code uses it.

``self.db = expanduser(f"~/.pool/{x}.db")`` then ``os.makedirs(os.path.dirname(self.db))``: the
code makes the dot folder, so it is portable. ``home = expanduser("~")`` then
``f"source {home}/.bashrc"``: a tool's dot file in every user's home, reached portably.
"""

from __future__ import annotations

import re

_TARGET = re.compile(r"^\s*(?:(?:export|local|readonly|declare)\s+)?((?:[A-Za-z_]\w*\.)?[A-Za-z_]\w*)\s*=[^=]")


def assigned_name(line: str) -> str | None:
    """The variable a line assigns to (``home``, ``self.db_pth``), if it is an assignment."""
    match = _TARGET.match(line)
    return match.group(1) if match else None


def made_later(data: bytes, after: int, name: str) -> bool:
    """Is the folder kept in ``name`` created further on in the file: ``makedirs(name)``,
    ``makedirs(os.path.dirname(name))``, ``Path(name).mkdir()``, ``name.mkdir()``?"""
    word = re.escape(name.encode("ascii"))
    pattern = (
        rb"\bmakedirs\([^\n]*?(?<![\w.])" + word + rb"(?!\w)|(?<![\w.])" + word + rb"(?:\.parent)*\.mkdir\("
        rb"|\bmkdir\b[^\n;|&]*\$\{?" + word + rb"(?![\w])"  # a shell's mkdir -p "$NAME"
    )
    return re.search(pattern, data[after:]) is not None


# The name a config line sets (``base_dir: "~/.x"``, ``base_dir = "~/.x"``), and the names Python code expands
# (``Path(base_dir).expanduser()``, ``expanduser(cfg.base_dir)``).
_CONFIG_KEY = re.compile(r"^\s*[\"']?([A-Za-z_][\w-]*)[\"']?\s*[:=]")
_EXPANDED = re.compile(
    rb"Path\(\s*(?:[A-Za-z_][\w.]*\.)?([A-Za-z_]\w*)\s*\)\.expanduser\(|expanduser\(\s*(?:[A-Za-z_][\w.]*\.)?([A-Za-z_]\w*)\s*\)"
)


def config_key(line: str) -> str | None:
    match = _CONFIG_KEY.match(line)
    return match.group(1) if match else None


def expanded_and_made(data: bytes) -> set[str]:
    """The names a Python file expands as a home path and, in the same file, makes folders with: where a config
    value under such a name is a dot folder in the home, the project's code creates it on any machine."""
    if b"expanduser(" not in data or (b".mkdir(" not in data and b"makedirs(" not in data):
        return set()
    return {(m.group(1) or m.group(2)).decode("ascii") for m in _EXPANDED.finditer(data)}


def dot_uses(data: bytes, after: int, name: str) -> list[tuple[int, int, str]]:
    """(start, end, dot name) of each use of the home kept in ``name`` with a dot folder or file right after it:
    ``f"{home}/.bashrc"``, ``home + "/.profile"``, ``os.path.join(home, ".ssh")``."""
    word = re.escape(name.encode("ascii"))
    pattern = (
        rb"\{" + word + rb"\}/(\.[\w.-]+)"
        rb"|(?<![\w.])" + word + rb"\s*\+\s*[rRuUfF]?[\"']/(\.[\w.-]+)"
        rb"|join\(\s*" + word + rb"\s*,\s*[rRuUfF]?[\"'](\.[\w.-]+)"
    )
    uses = []
    for match in re.finditer(pattern, data[after:]):
        dot = next(group for group in match.groups() if group)
        uses.append((after + match.start(), after + match.end(), dot.decode("utf-8", "replace")))
    return uses
