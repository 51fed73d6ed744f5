"""What kind of file a path sits in: code, configuration (a file list included), a notebook, or documentation."""

from __future__ import annotations

import re
from pathlib import PurePosixPath

from bundler.portability import context

CONFIG_SUFFIXES = frozenset({".json", ".yaml", ".yml", ".toml", ".ini", ".cfg", ".conf", ".env", ".properties"})
DOCS_SUFFIXES = frozenset({".md", ".markdown", ".rst", ".txt", ".adoc", ".log", ".html", ".htm", ".tex"})
DOCS_DIRS = frozenset({"docs", "doc", "logs", "log"})
LIST_SUFFIXES = frozenset({".txt", ".lst", ".list", ".csv", ".tsv", ".flist", ".scp"})


def category_of(relative: str, data: bytes = b"") -> str:
    path = PurePosixPath(relative)
    name, suffix = path.name.lower(), path.suffix.lower()
    if suffix == ".ipynb":
        return "notebook"
    if context.EXAMPLE_FILE.search(name):
        return "docs"
    if any(part.lower() in DOCS_DIRS for part in path.parts[:-1]):
        return "docs"  # docs/ and logs/ hold documentation and records, whatever their format
    if name.startswith("requirements") and suffix in (".txt", ".in"):
        return "config"
    if suffix in CONFIG_SUFFIXES or name.startswith(".env"):
        return "config"
    if suffix in LIST_SUFFIXES and _is_path_list(data):
        return "config"  # a data list: one path a line, read by the code
    if suffix in DOCS_SUFFIXES or name.startswith(("readme", "changelog", "license", "authors", "contributing")):
        return "docs"
    return "code"


_PATH_LINE = re.compile(rb"\s*(?:[\"']?(?:/|~/|[A-Za-z]:[\\/]|\.{1,2}/|[\w.-]+/))")


def _is_path_list(data: bytes) -> bool:
    """Do most of the first lines start with a path (a file list, not prose)?"""
    lines = [line for line in data[:65536].splitlines()[:200] if line.strip()]
    return bool(lines) and sum(1 for line in lines if _PATH_LINE.match(line)) >= 0.8 * len(lines)
