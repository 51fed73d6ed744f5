"""The modules a repository's code imports that none of its requirements provides (an
environment that happened to have them, like psutil in a conda base): said by init as a
note to check, never added on its own. Read from the syntax tree; an import inside a
``try`` is optional and not counted."""

from __future__ import annotations

import ast
import sys
from functools import lru_cache
from pathlib import Path, PurePosixPath

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from bundler.adopt.model import SourceRead
from bundler.adopt.survey import Layout
from bundler.contracts.dropped import DROPPED
from bundler.fsutil import read_toml
from bundler.resources import resource_path

SKIPPED = ("tests/", "test/", "docs/", "doc/", "examples/", "benchmarks/", "scripts/dev/")


@lru_cache(maxsize=1)
def module_table() -> dict[str, list[str]]:
    data = read_toml(resource_path("images") / "import-names.toml", hint="Reinstall bundler: its import-name table is damaged.")
    return {canonicalize_name(name): list(modules) for name, modules in data["modules"].items()}


def undeclared(root: Path, layout: Layout, source: SourceRead | None) -> list[str]:
    """'psutil (training/training_loop.py:16)' for each top-level module imported and not provided."""
    provided = _provided(source)
    local = _local_names(layout)
    stdlib = set(getattr(sys, "stdlib_module_names", ())) | {"__future__"}
    found: dict[str, str] = {}
    for relative in layout.python_files:
        if relative.startswith(SKIPPED) or "/tests/" in relative or PurePosixPath(relative).name.startswith("test_"):
            continue
        for module, line in _imports(root / relative):
            if module not in stdlib and module not in local and module.lower() not in provided and module not in found:
                found[module] = f"{relative}:{line}"
    return [f"{module} ({where})" for module, where in sorted(found.items())]


def _provided(source: SourceRead | None) -> set[str]:
    # the Target's, or the environment's; not numpy: torch's wheels do not depend on it (minGPT imported it, listing only torch)
    names = {"torch", "torchvision", "torchaudio", "triton", "pip", "setuptools"}
    table = module_table()
    for dependency in source.dependencies if source else []:
        try:
            requirement = Requirement(dependency.line)
        except InvalidRequirement:
            continue
        name = canonicalize_name(requirement.name)
        names |= {name.replace("-", "_"), *(module.lower() for module in table.get(name, []))}
        names |= {module for module, (shipper, release, _) in DROPPED.items() if name == shipper and _excludes(requirement, release)}
    return {name.lower() for name in names}


def _excludes(requirement: Requirement, release: str) -> bool:
    """Whether a pin rules out ``release`` and what follows it (``setuptools<82``): only then does the environment keep a dropped module."""
    return bool(str(requirement.specifier)) and not requirement.specifier.contains(release)


def _local_names(layout: Layout) -> set[str]:
    """Every name a file of the repository can be imported by: its top folder or file, and each
    file's own stem (a script imports its siblings)."""
    names = set()
    for relative in layout.python_files:
        parts = PurePosixPath(relative).parts
        names |= {parts[0].removesuffix(".py"), PurePosixPath(relative).stem}
        if parts[0] == "src" and len(parts) > 1:
            names.add(parts[1].removesuffix(".py"))
        names |= {part for part in parts[:-1]}
    return names


def _imports(path: Path) -> list[tuple[str, int]]:
    try:
        tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
    except (SyntaxError, ValueError):
        return []
    optional = {id(node) for parent in ast.walk(tree) if isinstance(parent, ast.Try) for child in parent.body for node in ast.walk(child)}
    found = []
    for node in ast.walk(tree):
        if id(node) in optional:
            continue
        if isinstance(node, ast.Import):
            found += [(alias.name.split(".")[0], node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.append((node.module.split(".")[0], node.lineno))
    return found
