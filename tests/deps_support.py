"""Shared helpers of the dependency tests: a fake PyPI with extra projects, source archives,
project wheels, and a CPU project on the fake index."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

from tests.fakeindex import FakeIndex, _page, _wheel, build_fake_index
from tests.lock_support import make_project

EPOCH = 1577836800  # 2020-01-01: archives with fixed times hash the same on every run


def fake_pypi(root: Path, wheels: dict[str, list[tuple[str, list[str], dict | None]]], sdists: dict[str, list[str]] = None) -> FakeIndex:
    """The tiny fake index plus ``wheels`` (name -> [(version, requires, modules)]) and ``sdists`` (name -> [version])."""
    index = build_fake_index(root)
    files = root / "files"
    for name, releases in wheels.items():
        names = [_wheel(files, name, version, "py3-none-any", requires, modules) for version, requires, modules in releases]
        names += [source_archive(files, name, version) for version in (sdists or {}).get(name, [])]
        _page(root / "pypi" / "simple" / name, names)
    for name, versions in (sdists or {}).items():
        if name not in wheels:
            _page(root / "pypi" / "simple" / name, [source_archive(files, name, version) for version in versions])
    return index


def source_archive(folder: Path, name: str, version: str, extra: dict[str, str] | None = None) -> str:
    """A real, buildable source archive (setuptools backend) of a one-module package."""
    module = name.replace("-", "_")
    stem = f"{module}-{version}"
    contents = {
        f"{stem}/pyproject.toml": '[build-system]\nrequires = ["setuptools>=61"]\nbuild-backend = "setuptools.build_meta"\n\n'
        f'[project]\nname = "{name}"\nversion = "{version}"\n',
        f"{stem}/{module}.py": f"VERSION = {version!r}\n",
        f"{stem}/PKG-INFO": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        **{f"{stem}/{path}": text for path, text in (extra or {}).items()},
    }
    return write_archive(Path(folder) / f"{stem}.tar.gz", contents).name


def write_archive(path: Path, contents: dict[str, str]) -> Path:
    """A .tar.gz of ``contents`` (member name -> text) with fixed times: the same bytes on every run."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", format=tarfile.PAX_FORMAT) as archive:
        for arcname, text in sorted(contents.items()):
            data = text.encode()
            info = tarfile.TarInfo(arcname)
            info.size, info.mtime, info.mode = len(data), EPOCH, 0o644
            archive.addfile(info, io.BytesIO(data))
    path.write_bytes(buffer.getvalue())
    return path


def project_wheel(folder: Path, name: str, version: str, body: str) -> Path:
    """A wheel of module ``name`` whose __init__ holds ``body``, in ``folder`` (e.g. project/wheels)."""
    folder.mkdir(parents=True, exist_ok=True)
    module = name.replace("-", "_")
    return folder / _wheel(folder, name, version, "py3-none-any", [], {f"{module}/__init__.py": body})


def cpu_project(root: Path, requirements: str, base_image: str | None = None) -> Path:
    """A CPU project for torch 2.9.1 (the fake index's) with ``requirements``."""
    return make_project(root, requirements, base_image=base_image)


def torch213_project(root: Path, requirements: str, base_image: str) -> Path:
    """A CPU project for the real torch 2.13.0 (the CPU wheel the image tests install) with ``requirements``."""
    project = cpu_project(root, requirements, base_image=base_image)
    toml = project / "bundle.toml"
    toml.write_text(toml.read_text().replace('torch = "2.9.1"', 'torch = "2.13.0"'))
    return project
