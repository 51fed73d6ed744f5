"""Pipfile: [packages] (version strings and tables), [requires] python_version, [[source]]
indexes and the [scripts] it runs. Development packages are not the image's."""

from __future__ import annotations

from pathlib import Path

from bundler.adopt.model import Dependency, Hint, SourceRead
from bundler.fsutil import read_toml

PIPFILE = "Pipfile"


def read_pipfile(root: Path) -> SourceRead | None:
    path = root / PIPFILE
    if not path.is_file():
        return None
    document = read_toml(path, hint="Fix its syntax at the position given; bundler init reads it without changing it.")
    source = SourceRead("pipfile", PIPFILE)
    indexes = {}
    for entry in document.get("source") or []:
        if isinstance(entry, dict) and isinstance(entry.get("url"), str):
            indexes[str(entry.get("name", ""))] = entry["url"]
            if "pypi.org" not in entry["url"]:
                source.indexes.append((entry["url"], f"{PIPFILE} [[source]] {entry.get('name', '')}".rstrip()))
    for name, value in (document.get("packages") or {}).items():
        _package(source, str(name), value, indexes)
    requires = document.get("requires") or {}
    python = requires.get("python_full_version") or requires.get("python_version")
    if isinstance(python, str) and python.strip():
        source.hints.append(Hint(f"{PIPFILE} [requires] python_version", python=python.strip()))
    for command in (document.get("scripts") or {}).values():
        if isinstance(command, str):
            source.commands.append(command)
    if document.get("dev-packages"):
        source.left_out.append(f"{len(document['dev-packages'])} [dev-packages] (development only, not the image's)")
    return source


def _package(source: SourceRead, name: str, value: object, indexes: dict[str, str]) -> None:
    where = f"{PIPFILE} [packages] {name}"
    table = value if isinstance(value, dict) else {"version": value}
    reference = next((key for key in ("git", "path", "file", "url", "editable") if key in table), None)
    if reference and reference != "editable":
        source.unreadable.append(f"{where} = {{{reference} = {table[reference]!r}}}: not a release on an index; left for you to decide")
        return
    version = str(table.get("version", "*")).strip()
    specifier = "" if version in ("*", "") else version if version[0] in "<>=!~" else f"=={version}"
    listed = table.get("extras")
    extras = [str(extra) for extra in listed] if isinstance(listed, list) else []
    markers = str(table.get("markers", "")).strip()
    line = name + (f"[{','.join(extras)}]" if extras else "") + specifier + (f"; {markers}" if markers else "")
    source.dependencies.append(Dependency(line, where))
    index = str(table.get("index", ""))
    if index in indexes:
        source.notes.append(f"{where} comes from index {index!r} ({indexes[index]})")
