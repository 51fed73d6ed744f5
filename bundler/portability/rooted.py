"""A folder right under ``/`` kept in a variable, and used as a folder elsewhere in the project.

``FS = "/checkpoint"`` alone may be anything (a route, a key); once some code of the project
builds a path on it (``f"{cluster.FS}/{user}/runs"``, ``os.path.join(FS, x)``,
``os.makedirs(FS)``) it is a folder of one machine. The assignments are collected per file
during the scan, the names used as a path's head across every Python file, and the two
are joined once the walk is done.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from bundler.machinepaths import FHS_TOP, portable_absolute
from bundler.portability.context import name_words

# NAME = "/folder" as a statement of its own (a trailing comment allowed); the "=" first, for a fast search.
_VALUE = re.compile(rb"""=[ \t]*[rRuU]?(["'])(/[A-Za-z_][\w.+-]*)/?\1[ \t]*(?:#[^\n]*)?$""", re.M)
_TARGET = re.compile(rb"[ \t]*([A-Za-z_]\w*)[ \t]*")
# The same statement as a line of a notebook's code cell, in its JSON text: "    root = \"/content\"\n",
_CELL_VALUE = re.compile(rb"""=[ \t]*[rRuU]?(\\"|')(/[A-Za-z_][\w.+-]*)/?\1[ \t]*(?:#[^\n"]*)?(?:\\n)?",?[ \t]*$""", re.M)
_CELL_TARGET = re.compile(rb'[ \t]*"[ \t]*([A-Za-z_]\w*)[ \t]*')
_NAME_ARGUMENT = rb"\(\s*(?:[A-Za-z_]\w*\.)*([A-Za-z_]\w*)\s*[,)]"
_KEYWORD_VALUE = rb"=\s*(?:[A-Za-z_]\w*\.)*([A-Za-z_]\w*)\s*[,)]"
_HEADS = (  # (a literal the file must hold, where a name is a path's head); each starts with its literal, searched fast
    (b"}/", re.compile(rb"\{(?:[A-Za-z_]\w*\.)*([A-Za-z_]\w*)\}/")),  # f"{cluster.FS}/{user}"
    (b"join(", re.compile(rb"join" + _NAME_ARGUMENT)),
    (b"makedirs(", re.compile(rb"makedirs" + _NAME_ARGUMENT)),
    (b"chdir(", re.compile(rb"chdir" + _NAME_ARGUMENT)),
    # a keyword that says folder: AudioDataset(data_path=TRAIN_FOLDER), Trainer(root_dir=FS)
    *((word, re.compile(word + _KEYWORD_VALUE)) for word in (b"path", b"dir", b"folder", b"root")),
)
# A drive's root kept in a variable (first = "D:/", ROOT = "E:\\"): a folder of one Windows machine once a path is built on it.
_DRIVE_VALUE = re.compile(rb"""=[ \t]*[rRuU]?(["'])([A-Za-z]:(?:/|\\{1,2}))\1[ \t]*(?:#[^\n]*)?$""", re.M)
_CELL_DRIVE_VALUE = re.compile(rb"""=[ \t]*[rRuU]?(\\"|')([A-Za-z]:(?:/|\\{2,4}))\1[ \t]*(?:#[^\n"]*)?(?:\\[rn])*",?[ \t]*$""", re.M)
_CONCATENATED = re.compile(rb"(?<![\w.])([A-Za-z_]\w*)\s*\+\s*(?:[A-Za-z_\"'(])")  # first + second + "x.png"
_ANY_VALUE = re.compile(rb"=[ \t]?[rRuU]?\\?[\"']/")
_NOT_FOLDER_WORDS = frozenset({"url", "urls", "uri", "api", "endpoint", "route", "routes", "prefix", "pattern", "regex"})


@dataclass
class Assignment:
    relative: str
    start: int  # offset of the path in the file
    end: int
    name: str
    group: str = "absolute"  # "windows" for a drive's root


def drive_roots(relative: str, data: bytes) -> list[Assignment]:
    """``NAME = "D:/"`` statements in one Python file or notebook's code, kept where the name is concatenated into a
    path (``NAME + second``) or is a path's head."""
    if b":/" not in data and b":\\" not in data:
        return []
    cell = relative.endswith(".ipynb")
    value, target_pattern = (_CELL_DRIVE_VALUE, _CELL_TARGET) if cell else (_DRIVE_VALUE, _TARGET)
    found = []
    for match in value.finditer(data):
        line_start = data.rfind(b"\n", 0, match.start()) + 1
        target = target_pattern.fullmatch(data, line_start, match.start())
        if target is not None:
            found.append(Assignment(relative, match.start(2), match.end(2), target.group(1).decode("ascii"), "windows"))
    if not found:
        return []
    used = {m.group(1).decode("ascii") for m in _CONCATENATED.finditer(data)} | path_heads(data)
    return [assignment for assignment in found if assignment.name in used]


def assignments(relative: str, data: bytes) -> list[Assignment]:
    """``NAME = "/folder"`` statements in one Python file or notebook's code, the folder none of the system's."""
    if _ANY_VALUE.search(data) is None:
        return []
    cell = relative.endswith(".ipynb")
    value, target_pattern = (_CELL_VALUE, _CELL_TARGET) if cell else (_VALUE, _TARGET)
    found = []
    for match in value.finditer(data):
        line_start = data.rfind(b"\n", 0, match.start()) + 1
        target = target_pattern.fullmatch(data, line_start, match.start())
        folder = match.group(2).decode("utf-8", "replace")
        if target is None or folder[1:] in FHS_TOP or portable_absolute(folder):
            continue
        name = target.group(1).decode("ascii")
        if _NOT_FOLDER_WORDS.isdisjoint(name_words(name)):
            found.append(Assignment(relative, match.start(2), match.end(2), name))
    return found


def path_heads(data: bytes) -> set[str]:
    """The names a Python file builds paths on: ``f"{FS}/x"``, ``join(FS, x)``, ``makedirs(FS)``."""
    heads: set[str] = set()
    for literal, pattern in _HEADS:
        if literal in data:
            heads.update(m.group(1).decode("ascii") for m in pattern.finditer(data))
    return heads
