"""pyproject.toml: PEP 621 ``[project]`` (dependencies, named extras, requires-python,
scripts) and Poetry's ``[tool.poetry]`` (dependencies with their constraints translated,
extras, python, sources, scripts). Read as data; no build backend runs.
"""

from __future__ import annotations

from pathlib import Path

from bundler.adopt.model import Dependency, Hint, SourceRead, label_build
from bundler.adopt.poetry import NotTranslatable, translate
from bundler.errors import UsageError
from bundler.fsutil import read_toml

PYPROJECT = "pyproject.toml"


def read_document(root: Path) -> dict:
    path = root / PYPROJECT
    return (
        read_toml(path, hint="Fix its syntax at the position given; bundler init reads it without changing it.") if path.is_file() else {}
    )


def read_pep621(root: Path, document: dict, extras: list[str]) -> SourceRead | None:
    """[project] of pyproject.toml, None when it declares no dependencies at all."""
    project = document.get("project")
    if not isinstance(project, dict):
        return None
    source = SourceRead("pep621", PYPROJECT, name=str(project.get("name", "")), builds_package=_builds(document))
    if "dependencies" in (project.get("dynamic") or []):
        dynamic = document.get("tool", {}).get("setuptools", {}).get("dynamic", {}).get("dependencies", {})
        files = dynamic.get("file") if isinstance(dynamic, dict) else None
        named = f" (from {', '.join(files) if isinstance(files, list) else files})" if files else ""
        source.unreadable.append(f"{PYPROJECT}: [project] dependencies are dynamic{named}: the build backend computes them")
    for line in _strings(project.get("dependencies")):
        source.dependencies.append(Dependency(line, f"{PYPROJECT} [project] dependencies"))
    optional = project.get("optional-dependencies") or {}
    for extra in extras:
        if extra not in optional:
            continue
        source.dependencies += [
            Dependency(line, f"{PYPROJECT} [project.optional-dependencies] {extra}") for line in _strings(optional[extra])
        ]
    if isinstance(project.get("requires-python"), str):
        source.hints.append(Hint(f"{PYPROJECT} requires-python", python=project["requires-python"]))
    source.scripts = {str(k): str(v) for k, v in (project.get("scripts") or {}).items()}
    source.notes += [
        f"{PYPROJECT} has no extra {extra!r} (its extras: {', '.join(optional) or 'none'})" for extra in extras if extra not in optional
    ]
    if not source.dependencies and not source.unreadable and not source.scripts:
        return None
    return source


def read_poetry(root: Path, document: dict, extras: list[str]) -> SourceRead | None:
    """[tool.poetry] of pyproject.toml, None without one."""
    poetry = document.get("tool", {}).get("poetry")
    if not isinstance(poetry, dict) or not isinstance(poetry.get("dependencies"), dict):
        return None
    package_mode = poetry.get("package-mode", True) is not False
    source = SourceRead("poetry", PYPROJECT, name=str(poetry.get("name", "")), builds_package=package_mode and _builds(document))
    wanted = {name for extra in extras for name in (poetry.get("extras") or {}).get(extra, [])}
    where = f"{PYPROJECT} [tool.poetry.dependencies]"
    for name, value in poetry["dependencies"].items():
        if name == "python":
            source.hints.append(Hint(f"{where} python", python=_python(value, source, where)))
            continue
        for item in value if isinstance(value, list) else [value]:
            _poetry_dependency(source, name, item, where, wanted)
    for entry in poetry.get("source") or []:
        if isinstance(entry, dict) and isinstance(entry.get("url"), str):
            source.indexes.append((entry["url"], f"{PYPROJECT} [[tool.poetry.source]] {entry.get('name', '')}".rstrip()))
    for name, target in (poetry.get("scripts") or {}).items():
        source.scripts[str(name)] = str(target.get("callable", "")) if isinstance(target, dict) else str(target)
    known = poetry.get("extras") or {}
    source.notes += [
        f"{PYPROJECT} has no Poetry extra {extra!r} (its extras: {', '.join(known) or 'none'})" for extra in extras if extra not in known
    ]
    return source


def _poetry_dependency(source: SourceRead, name: str, item: object, where: str, wanted: set[str]) -> None:
    table = item if isinstance(item, dict) else {"version": item}
    if table.get("optional") and name not in wanted:
        source.left_out.append(f"{name} (optional in {where}; pass --extra to include its extra)")
        return
    reference = next((key for key in ("git", "path", "url", "file") if key in table), None)
    if reference:
        source.unreadable.append(
            f"{where} {name} = {{{reference} = {table[reference]!r}}}: not a release on an index; left for you to decide"
        )
        return
    try:
        specifier, label = translate(str(table.get("version", "*")))
    except NotTranslatable as error:
        source.unreadable.append(f"{where} {name}: {error}")
        return
    listed = table.get("extras")
    extras = [str(extra) for extra in listed] if isinstance(listed, list) else []
    markers = [str(table["markers"])] if table.get("markers") else []
    if table.get("python"):
        try:
            python, _ = translate(str(table["python"]))
            markers += [
                " and ".join(
                    f'python_version {part[:2] if part[1] in "=<>" else part[0]} "{part.lstrip("<>=!~")}"'
                    for part in python.split(",")
                    if part
                )
            ]
        except NotTranslatable as error:
            source.unreadable.append(f"{where} {name} python: {error}")
    line = (
        name
        + (f"[{','.join(extras)}]" if extras else "")
        + (f"=={specifier[2:]}+{label}" if label and specifier.startswith("==") else specifier)
    )
    if label and not specifier.startswith("=="):
        source.notes.append(f"{where} {name} asks for build {label!r} in a range; the build goes to the Target")
        source.hints.append(Hint(f"{where} {name}", **_label_hint(label)))
    source.dependencies.append(Dependency(line + (f"; {' and '.join(f'({m})' for m in markers)}" if markers else ""), f"{where} {name}"))


def _label_hint(label: str) -> dict[str, str]:
    """A build label as the Target reads it (cu121 -> cuda 12.1); the interpretation is infer's."""
    backend, accelerator = label_build(label)
    return {"backend": backend, "accelerator": accelerator}


def _python(value: object, source: SourceRead, where: str) -> str:
    try:
        return translate(str(value))[0]
    except NotTranslatable as error:
        source.unreadable.append(f"{where} python: {error}")
        return ""


def _builds(document: dict) -> bool:
    system = document.get("build-system")
    return isinstance(system, dict) and bool(system.get("build-backend") or system.get("requires"))


def _strings(value: object) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise UsageError(
            f"{PYPROJECT}: a dependency list is not a list of strings: {value!r}.", hint="Write each dependency as a PEP 508 string."
        )
    return [item.strip() for item in value if item.strip()]
