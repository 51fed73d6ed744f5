"""conda's environment.yml: its ``pip:`` list as it is, its conda packages through the name
table kept as data (images/conda-pypi.toml). torch's build (pytorch, pytorch-cuda,
cudatoolkit, cpuonly) becomes the Target; a name the table does not know is listed,
never dropped silently; a name deliberately left out (python, pip, system libraries)
is listed with its reason.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

from bundler.adopt.model import Dependency, Hint, SourceRead
from bundler.errors import ProjectFileError
from bundler.fsutil import read_toml
from bundler.resources import resource_path

ENVIRONMENT_FILES = ("environment.yml", "environment.yaml", "env.yml", "env.yaml", "conda.yml", "conda.yaml")
_SPEC = re.compile(r"^(?:(?P<channel>[A-Za-z0-9_.-]+)::)?(?P<name>[A-Za-z0-9_.-]+)\s*(?P<rest>.*)$")


@lru_cache(maxsize=1)
def name_table() -> dict:
    return read_toml(resource_path("images") / "conda-pypi.toml", hint="Reinstall bundler: its conda name table is damaged.")


def environment_file(root: Path) -> str | None:
    return next((name for name in ENVIRONMENT_FILES if (root / name).is_file()), None)


def read_environment(root: Path, name: str) -> SourceRead:
    import yaml

    path = root / name
    try:
        document = yaml.safe_load(path.read_text(encoding="utf-8", errors="replace"))
    except yaml.YAMLError as error:
        raise ProjectFileError(
            f"{path} is not valid YAML: {error}.", hint="Fix its syntax; bundler init reads it without changing it.", path=path
        ) from None
    source = SourceRead("conda", name, name=str((document or {}).get("name", "")) if isinstance(document, dict) else "")
    entries = document.get("dependencies") if isinstance(document, dict) else None
    for index, item in enumerate(entries or []):
        where = f"{name} dependencies[{index}]"
        if isinstance(item, dict) and isinstance(item.get("pip"), list):
            for line in item["pip"]:
                _pip_line(source, str(line).strip(), f"{name} pip:")
        elif isinstance(item, str):
            _conda_item(source, item.strip(), where)
    return source


def _pip_line(source: SourceRead, line: str, where: str) -> None:
    if line.startswith(("-r", "--requirement")):
        source.unreadable.append(f"{where} {line}: an include; adopt the file it names as the requirements file instead")
    elif line.startswith(("--index-url", "--extra-index-url", "-i ", "-f ", "--find-links")):
        source.indexes.append((line.split()[-1].split("=", 1)[-1], where))
    elif line:
        source.dependencies.append(Dependency(line, where))


def _conda_item(source: SourceRead, item: str, where: str) -> None:
    match = _SPEC.match(item)
    if not match:
        source.unmapped.append(f"{item} ({where}: not a package spec)")
        return
    name, version = match.group("name").lower(), _conda_version(match.group("rest"))
    table = name_table()
    if name in table["target"]["names"] or name in ("pytorch", "torch"):
        _target_item(source, name, version, where, item)
        return
    if name in table["skip"]:
        if name == "python" and version:
            source.hints.append(Hint(f"{where} {item}", python=version))
        source.left_out.append(f"{item}: {table['skip'][name]}")
        return
    pypi = table["rename"].get(name) or (name if name in table["same"]["names"] else None)
    if pypi is None:
        source.unmapped.append(f"{item} ({where}): no PyPI name known; add it to the requirements yourself, or drop it")
        return
    source.dependencies.append(Dependency(pypi + version, f"{where} (conda {name})"))


def _target_item(source: SourceRead, name: str, version: str, where: str, item: str) -> None:
    plain = version.lstrip("=").rstrip("*").rstrip(".")
    if name in ("pytorch", "torch"):
        source.hints.append(Hint(f"{where} {item}", torch=plain if version.startswith("==") and not version.endswith("*") else ""))
        source.dependencies.append(Dependency("torch" + version, f"{where} (conda {name})"))
    elif name == "cpuonly":
        source.hints.append(Hint(f"{where} {item}", backend="cpu"))
    elif name in ("pytorch-cuda", "cudatoolkit", "cuda-toolkit", "cuda-version") and plain:
        source.hints.append(Hint(f"{where} {item}", backend="cuda", accelerator=".".join(plain.split(".")[:2])))
    elif name == "rocm" and plain:
        source.hints.append(Hint(f"{where} {item}", backend="rocm", accelerator=".".join(plain.split(".")[:2])))
    source.left_out.append(f"{item}: part of the Target (torch's build), not a requirement")


def _conda_version(rest: str) -> str:
    """conda's version spec as PEP 440: ``=1.9.1`` or ``1.9.1=build`` is ``==1.9.1``, ``=1.9`` is
    ``==1.9.*`` (conda's fuzzy match), ``>=1.20`` stays."""
    text = "".join(rest.split())
    if not text:
        return ""
    if text.startswith("==") or text.startswith("=") or text[0].isdigit():
        version = text.lstrip("=").split("=")[0].rstrip("*").rstrip(".")
        exact = text.startswith("==") or version.count(".") >= 2
        return f"=={version}" if exact else f"=={version}.*"
    return text
