"""Before anything compiles against torch: what the import check would refuse, read from the wheels' files.

A build that compiles C++/CUDA against the Target's torch takes minutes to an hour; the
import check on the finished dependency image then refuses a direct dependency made for an
older torch (``from torch._six import …``: torch 2 dropped the module) or for a release of
setuptools that still shipped ``pkg_resources``. Both are known from files the build holds
before it compiles: the direct dependencies' wheels (downloaded, or built from a source
archive whose build does not import torch) and the wheels of the packages they import.

For each direct dependency, its modules are followed from its top-level packages through the
imports they run when imported (module-level statements, not those under ``try``, inside
functions, or behind ``if TYPE_CHECKING``), within its own wheel. An import of another lock
member's module that member's wheel does not ship, or of a module the pinned release of its
distribution dropped (contracts/dropped.py), is what the import check would meet: the build
stops before compiling, naming the file and line.
"""

from __future__ import annotations

import ast
import zipfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from bundler.contracts.dropped import DROPPED, pin_that_ships
from bundler.errors import BuildError

_SOURCE = (".py",)
_BINARY = (".so", ".pyd")


@dataclass(frozen=True)
class Stale:
    """A direct dependency's module imports a module its provider's pinned release does not ship."""

    dist: str
    version: str
    file: str  # inside the wheel
    line: int
    module: str
    provider: str  # "torch 2.13.0+cpu"
    dropped_in: str = ""  # the provider's first release without it, when the table knows


@dataclass(frozen=True)
class WheelModules:
    """The modules a wheel installs (dotted names) and the sources of its Python ones."""

    modules: frozenset[str]
    top_levels: frozenset[str]
    sources: dict[str, str]  # dotted name -> member path
    binary: frozenset[str]  # extension modules: what they register at run time cannot be read from files

    @classmethod
    def read(cls, wheel: Path) -> WheelModules:
        with zipfile.ZipFile(wheel) as archive:
            names = archive.namelist()
        modules: set[str] = set()
        sources: dict[str, str] = {}
        binary: set[str] = set()
        for member in names:
            modules.update(_folders(member))  # a folder is a namespace package to import, with or without __init__.py
            dotted = _module_name(member)
            if dotted is None:
                continue
            parts = dotted.split(".")
            modules.update(".".join(parts[:i]) for i in range(1, len(parts) + 1))
            if member.endswith(_SOURCE):
                sources[dotted] = member
            elif not member.endswith(".pyi"):
                binary.add(dotted)
        top = frozenset(name.split(".")[0] for name in modules)
        return cls(frozenset(modules), top, sources, frozenset(binary))


def _folders(member: str) -> Iterator[str]:
    parts = PurePosixPath(member).parts[:-1]
    if parts and parts[0].endswith((".dist-info", ".data")):
        return
    for i in range(1, len(parts) + 1):
        if not parts[i - 1].isidentifier():
            return
        yield ".".join(parts[:i])


def _module_name(member: str) -> str | None:
    """``torch/_six.py`` -> ``torch._six``; ``pkg/__init__.py`` -> ``pkg``; None for what no import reaches."""
    path = PurePosixPath(member)
    if not path.parts or path.parts[0].endswith((".dist-info", ".data")):
        return None
    name = path.name
    if name.endswith(_SOURCE + (".pyi",)):
        stem = name.rsplit(".", 1)[0]
    elif name.endswith(_BINARY) or ".so." in name:
        stem = name.split(".", 1)[0]
    else:
        return None
    if not all(part.isidentifier() for part in path.parts[:-1]) or not stem.isidentifier():
        return None
    parts = list(path.parts[:-1]) + ([] if stem == "__init__" else [stem])
    return ".".join(parts) or None


def module_level_imports(source: str, module: str, is_package: bool) -> Iterator[tuple[str, str | None, int]]:
    """(module imported, name imported from it or None, line) for each import a module runs when it is imported.

    Relative imports are made absolute against ``module``; imports under ``try``, in a function
    or class body, or behind a TYPE_CHECKING test are left out (they may be optional)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return
    package = module if is_package else module.rpartition(".")[0]
    for node in _run_at_import(tree.body):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, None, node.lineno
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(node.module, node.level, package)
            if base is None:
                continue
            for alias in node.names:
                yield base, alias.name, node.lineno


def _run_at_import(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    for node in body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        elif isinstance(node, ast.If) and not _type_checking(node.test):
            yield from _run_at_import(node.body)
            yield from _run_at_import(node.orelse)
        elif isinstance(node, ast.With):
            yield from _run_at_import(node.body)


def _type_checking(test: ast.expr) -> bool:
    return any(
        isinstance(n, ast.Name) and n.id == "TYPE_CHECKING" or isinstance(n, ast.Attribute) and n.attr == "TYPE_CHECKING"
        for n in ast.walk(test)
    )


def _absolute(module: str | None, level: int, package: str) -> str | None:
    if level == 0:
        return module
    parts = package.split(".") if package else []
    if level - 1 > len(parts):
        return None
    base = parts[: len(parts) - (level - 1)]
    return ".".join(base + ([module] if module else [])) or None


def provider_names() -> frozenset[str]:
    """The distributions whose wheels are read for what they ship: torch (whose modules the ops compiled against
    it and the packages made for it import) and those the table of dropped modules names. Others are not read:
    a package can make modules at run time (``six.moves``) that no file shows."""
    return frozenset({"torch"} | {canonicalize_name(shipper) for shipper, _, _ in DROPPED.values()})


@dataclass(frozen=True)
class Provider:
    dist: str
    version: str
    modules: WheelModules


def stale_imports(dist: str, version: str, wheel: Path, providers: Iterable[Provider]) -> list[Stale]:
    """What ``dist``'s modules import when imported that a provider's wheel does not ship (first per module)."""
    own = WheelModules.read(wheel)
    by_top = {top: provider for provider in providers for top in provider.modules.top_levels}
    found: dict[str, Stale] = {}
    with zipfile.ZipFile(wheel) as archive:
        for module, member in _reached(own, archive):
            text = archive.read(member).decode("utf-8", "replace")
            for imported, name, line in module_level_imports(text, module, member.endswith("__init__.py")):
                stale = _missing(imported, name, by_top, own)
                if stale is not None and stale[0] not in found:
                    gone, provider, dropped_in = stale
                    found[gone] = Stale(dist, version, member, line, gone, f"{provider.dist} {provider.version}", dropped_in)
    return list(found.values())


def _reached(own: WheelModules, archive: zipfile.ZipFile) -> Iterator[tuple[str, str]]:
    """(module, member) for each Python module of the wheel that importing its top-level packages runs."""
    queue = sorted(top for top in own.top_levels if top in own.sources)
    seen = set(queue)
    while queue:
        module = queue.pop(0)
        member = own.sources[module]
        yield module, member
        text = archive.read(member).decode("utf-8", "replace")
        for imported, name, _ in module_level_imports(text, module, member.endswith("__init__.py")):
            for candidate in (imported, f"{imported}.{name}" if name else ""):
                parts = candidate.split(".") if candidate else []
                for i in range(1, len(parts) + 1):  # importing a.b.c runs a, a.b and a.b.c
                    step = ".".join(parts[:i])
                    if step in own.sources and step not in seen:
                        seen.add(step)
                        queue.append(step)


def _missing(imported: str, name: str | None, by_top: dict[str, Provider], own: WheelModules) -> tuple[str, Provider, str] | None:
    top = imported.split(".")[0]
    if top in own.top_levels:
        return None
    dropped = _dropped(imported, by_top)
    if dropped is not None:
        return dropped
    provider = by_top.get(top)
    if provider is None:
        return None
    # `from a.b import c`: a.b must be a module; c may be a name inside it, so only a.b is known to be needed
    parents = {imported.rsplit(".", i)[0] for i in range(1, imported.count(".") + 1)}
    if imported not in provider.modules.modules and not parents & provider.modules.binary:
        return imported, provider, ""
    return None


def _dropped(imported: str, by_top: dict[str, Provider]) -> tuple[str, Provider, str] | None:
    """A module the table says a distribution dropped, where the lock pins that distribution at or after the release."""
    top = imported.split(".")[0]
    entry = DROPPED.get(top)
    if entry is None:
        return None
    shipper, release, _ = entry
    provider = next((p for p in by_top.values() if canonicalize_name(p.dist) == canonicalize_name(shipper)), None)
    if provider is None or top in provider.modules.top_levels:
        return None
    try:
        dropped = Version(provider.version) >= Version(release)
    except InvalidVersion:
        return None
    return (top, provider, release) if dropped else None


def refuse(found: list[Stale], waiting: list[str], input_name: str) -> BuildError:
    """The error that stops the build before it compiles ``waiting`` (the pins built against torch)."""
    lines = [f"{s.dist} {s.version} imports {s.module} ({s.file}, line {s.line}), a module {s.provider} does not ship" for s in found]
    first = found[0]
    provider = first.provider.split()[0]
    why = f"{provider} dropped it in release {first.dropped_in}" if first.dropped_in else f"it was made for another {provider}"
    return BuildError(
        f"the import check would refuse the dependency image, so nothing was compiled ({', '.join(waiting)} not built): "
        + "; ".join(lines)
        + f". Importing {first.dist} fails whatever else is installed: {why}.",
        hint=_route(first, provider, input_name),
        value=first.dist,
    )


def _route(first: Stale, provider: str, input_name: str) -> str:
    if first.dropped_in:  # the table knows the last releases that ship it, and what else constrains the pin
        _, _, note = DROPPED[first.module.split(".")[0]]
        return (
            f"Pin `{pin_that_ships(first.module)}` in {input_name} ({note}), or a release of {first.dist} that no longer imports "
            f"{first.module}; then `bundler lock` and `bundler build`."
        )
    return (
        f"Pin a release of {first.dist} made for {first.provider} in {input_name}, or a release of {provider} that still ships "
        f"{first.module}; then `bundler lock` and `bundler build`."
    )
