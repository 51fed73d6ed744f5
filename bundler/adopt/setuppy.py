"""setup.py read from its syntax tree, and setup.cfg's [options]: never run.

``setup(install_requires=[...])`` is read when the value is a literal or a module-level
name bound to one; anything computed (a call, a file read, a comprehension) is named
with its line and left for the user.
"""

from __future__ import annotations

import ast
import configparser
from pathlib import Path

from bundler.adopt.model import Dependency, Hint, SourceRead

SETUP_PY = "setup.py"
SETUP_CFG = "setup.cfg"


def read_setup_py(root: Path, extras: list[str]) -> SourceRead | None:
    path = root / SETUP_PY
    if not path.is_file():
        return None
    source = SourceRead("setup.py", SETUP_PY, builds_package=True)
    try:
        tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"), filename=str(path))
    except SyntaxError as error:
        source.unreadable.append(f"{SETUP_PY}:{error.lineno}: does not parse ({error.msg})")
        return source
    call = _setup_call(tree)
    if call is None:
        source.unreadable.append(f"{SETUP_PY}: no setup(...) call found")
        return source
    names = _module_literals(tree)
    keywords = {keyword.arg: keyword.value for keyword in call.keywords if keyword.arg}
    for line in _value(source, keywords, "install_requires", names, list) or []:
        source.dependencies.append(Dependency(str(line), f"{SETUP_PY}:{keywords['install_requires'].lineno} install_requires"))
    extra_table = _value(source, keywords, "extras_require", names, dict) or {}
    for extra in extras:
        lines = extra_table.get(extra)
        if lines is None:
            source.notes.append(f"{SETUP_PY} has no extra {extra!r} (its extras: {', '.join(extra_table) or 'none'})")
        for line in [lines] if isinstance(lines, str) else lines or []:
            source.dependencies.append(Dependency(str(line), f"{SETUP_PY} extras_require {extra}"))
    python = _value(source, keywords, "python_requires", names, str)
    if python:
        source.hints.append(Hint(f"{SETUP_PY} python_requires", python=python))
    name = _value(source, keywords, "name", names, str, quiet=True)
    source.name = name or ""
    entry_points = _value(source, keywords, "entry_points", names, dict) or {}
    source.scripts = _console_scripts(entry_points.get("console_scripts", []))
    return source


def read_setup_cfg(root: Path, extras: list[str]) -> SourceRead | None:
    path = root / SETUP_CFG
    if not path.is_file():
        return None
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(path.read_text(encoding="utf-8", errors="replace"), source=str(path))
    except configparser.Error as error:
        source = SourceRead("setup.cfg", SETUP_CFG)
        source.unreadable.append(f"{SETUP_CFG}: does not parse ({error.message})")
        return source
    if not parser.has_section("options") and not parser.has_section("options.entry_points"):
        return None
    source = SourceRead("setup.cfg", SETUP_CFG, name=parser.get("metadata", "name", fallback=""), builds_package=True)
    for line in _lines(parser.get("options", "install_requires", fallback="")):
        source.dependencies.append(Dependency(line, f"{SETUP_CFG} [options] install_requires"))
    for extra in extras:
        if not parser.has_option("options.extras_require", extra):
            source.notes.append(f"{SETUP_CFG} has no extra {extra!r}")
            continue
        source.dependencies += [
            Dependency(line, f"{SETUP_CFG} [options.extras_require] {extra}")
            for line in _lines(parser.get("options.extras_require", extra))
        ]
    python = parser.get("options", "python_requires", fallback="").strip()
    if python:
        source.hints.append(Hint(f"{SETUP_CFG} python_requires", python=python))
    source.scripts = _console_scripts(_lines(parser.get("options.entry_points", "console_scripts", fallback="")))
    return source


def _setup_call(tree: ast.Module) -> ast.Call | None:
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
            if name == "setup":
                return node
    return None


def _module_literals(tree: ast.Module) -> dict[str, ast.expr]:
    """Module-level ``NAME = <expression>`` bindings (the last one wins, as when run)."""
    bound: dict[str, ast.expr] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            bound[node.targets[0].id] = node.value
    return bound


def _value(source: SourceRead, keywords: dict[str, ast.expr], key: str, names: dict[str, ast.expr], kind: type, quiet: bool = False):
    node = keywords.get(key)
    if node is None:
        return None
    if isinstance(node, ast.Name) and node.id in names:
        node = names[node.id]
    try:
        value = ast.literal_eval(node)
    except (ValueError, SyntaxError, TypeError):
        if not quiet:
            source.unreadable.append(
                f"{SETUP_PY}:{node.lineno}: {key} is computed ({ast.unparse(node)[:80]}); read it yourself and list what it gives"
            )
        return None
    if not isinstance(value, kind) and not (kind is list and isinstance(value, tuple)):
        if not quiet:
            source.unreadable.append(f"{SETUP_PY}:{node.lineno}: {key} is a {type(value).__name__}, not a {kind.__name__}")
        return None
    return value


def _console_scripts(lines: object) -> dict[str, str]:
    scripts = {}
    items = [lines] if isinstance(lines, str) else list(lines) if isinstance(lines, (list, tuple)) else []
    for line in items:
        name, sep, target = str(line).partition("=")
        if sep and name.strip() and target.strip():
            scripts[name.strip()] = target.strip().split()[0]
    return scripts


def _lines(text: str) -> list[str]:
    return [line.split("#", 1)[0].strip() for line in text.splitlines() if line.split("#", 1)[0].strip()]
