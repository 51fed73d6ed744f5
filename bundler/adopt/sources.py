"""Every dependency source of a folder, read; the one the lock will use, and why; where
the sources disagree on a pin."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from bundler.adopt import conda, pipfile, pyproject, reqfiles, setuppy
from bundler.adopt.model import SourceRead

PACKAGE_KINDS = ("pep621", "poetry", "setup.cfg", "setup.py")
WHY = {
    "requirements": "a requirements file is what the project installs from; `bundler lock` reads it as it is",
    "pep621": "pyproject.toml's [project] dependencies are the package's own",
    "poetry": "Poetry's [tool.poetry.dependencies] are the package's own",
    "setup.cfg": "setup.cfg's install_requires are the package's own",
    "setup.py": "setup.py's install_requires are the package's own",
    "pipfile": "the Pipfile's [packages] are what pipenv installs",
    "conda": "the conda environment is the only dependency source",
}


@dataclass
class Sources:
    found: list[SourceRead] = field(default_factory=list)
    chosen: SourceRead | None = None
    reason: str = ""
    disagreements: list[str] = field(default_factory=list)

    @property
    def package(self) -> SourceRead | None:
        """The source that makes the project's own package, when one does."""
        return next((s for s in self.found if s.kind in PACKAGE_KINDS and s.builds_package), None)

    @property
    def scripts(self) -> dict[str, str]:
        return next((s.scripts for s in self.found if s.scripts), {})


def read_all(root: Path, extras: list[str]) -> Sources:
    document = pyproject.read_document(root)
    found: list[SourceRead] = []
    files = reqfiles.candidates(root)
    if files:
        found.append(reqfiles.read(root, files[0]))
    for reader in (
        lambda: pyproject.read_pep621(root, document, extras),
        lambda: pyproject.read_poetry(root, document, extras),
        lambda: setuppy.read_setup_cfg(root, extras),
        lambda: setuppy.read_setup_py(root, extras),
        lambda: pipfile.read_pipfile(root),
    ):
        source = reader()
        if source is not None:
            found.append(source)
    environment = conda.environment_file(root)
    if environment:
        found.append(conda.read_environment(root, environment))
    result = Sources(found)
    result.chosen = next((s for s in found if s.dependencies or s.kind == "requirements"), found[0] if found else None)
    if result.chosen is not None:
        others = [s.file for s in found if s is not result.chosen and s.dependencies]
        result.reason = WHY[result.chosen.kind] + (f" (also read: {', '.join(dict.fromkeys(others))})" if others else "")
    result.disagreements = disagreements(found)
    return result


def disagreements(found: list[SourceRead]) -> list[str]:
    """'numpy: ==1.26.4 (Pipfile [packages] numpy) vs >=1.20 (environment.yml …)' for each name two sources
    pin differently for the same environment (the same marker). One source's own lines for a name are its
    author's one statement (Poetry's multiple constraints, one per platform), never a disagreement."""
    seen: dict[tuple[str, str], list[tuple[str, str, str]]] = {}
    for source in found:
        for dependency in source.dependencies:
            try:
                requirement = Requirement(dependency.line)
            except InvalidRequirement:
                continue
            if str(requirement.specifier):
                key = (canonicalize_name(requirement.name), str(requirement.marker or ""))
                seen.setdefault(key, []).append((str(requirement.specifier), dependency.origin, source.file))
    lines = []
    for (name, _), stated in sorted(seen.items()):
        if len({file for _, _, file in stated}) > 1 and len({_meaning(specifier) for specifier, _, _ in stated}) > 1:
            lines.append(f"{name}: " + " vs ".join(f"{specifier} ({origin})" for specifier, origin, _ in stated))
    return lines


def _meaning(specifier: str) -> frozenset:
    """A specifier by what it means: >=2 and >=2.0.0 are the same range."""
    from packaging.specifiers import SpecifierSet
    from packaging.version import InvalidVersion, Version

    meant: set[tuple[str, object, bool]] = set()
    for item in SpecifierSet(specifier):
        try:
            meant.add((item.operator, Version(item.version.rstrip(".*")), item.version.endswith(".*")))
        except InvalidVersion:
            meant.add((item.operator, item.version, False))
    return frozenset(meant)
