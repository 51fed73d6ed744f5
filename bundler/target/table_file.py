"""Reading the compatibility table: images/compat.toml merged with the user's rows.

The shipped table is merged with the user's own rows — ``$XDG_CONFIG_HOME/bundler/
compat.toml`` and then the file(s) named by ``$BUNDLER_COMPAT`` (``os.pathsep``
separated) — each validated the same way; a user ``[[release]]`` row replaces the shipped
row for the same torch version, a ``[cuda."X.Y"]``/``[rocm."X.Y"]`` entry replaces that
entry. Every key is checked: an unknown one or a malformed value names the file and row.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from bundler.errors import ProjectFileError, UsageError
from bundler.fsutil import read_toml
from bundler.resources import resource_path
from bundler.target.table import CompatTable, CudaInfo, Release, RocmInfo
from bundler.target.versions import ACCELERATOR_RE, MINOR_RE, PYTHON_RE, RELEASE_RE

DRIVER_RE = re.compile(r"^\d+(\.\d+){0,2}$")
ARCH_RE = re.compile(r"^(sm_\d+a?|compute_\d+|gfx[0-9a-f]+)$")
GFX_RE = re.compile(r"^gfx[0-9a-f]+$")
SETUPTOOLS_RULES = ("never", "python>=3.12", "always")
CXX_STANDARDS = (14, 17, 20, 23)

_TOP_KEYS = {"schema", "index_root", "pypi_index", "runtime_base", "cpu_devel_base", "sources", "cuda", "rocm", "release"}
_CUDA_KEYS = {"driver_toolkit", "driver_minor_compat", "devel_base", "confirmed", "sources"}
_ROCM_KEYS = {"arch", "devel_base", "confirmed", "sources"}
_RELEASE_KEYS = {
    "torch",
    "torchvision",
    "torchaudio",
    "torchtext",
    "cxx_standard",
    "triton",
    "pytorch_triton_rocm",
    "cuda",
    "cuda_aarch64",
    "rocm",
    "cpu",
    "pypi_cuda",
    "pypi_cuda_aarch64",
    "python",
    "setuptools",
    "confirmed",
    "note",
    "arch",
    "sources",
    "unchecked",
}
CHECKABLE = tuple(sorted(_RELEASE_KEYS - {"torch", "confirmed", "note", "sources", "unchecked"}))
PYPI_BUILD_RE = re.compile(r"^(\d+\.\d+|cpu)$")
TRITON_RE = re.compile(r"^(~=)?\d+\.\d+\.\d+$")
SOURCE_ID_RE = re.compile(r"^[a-z0-9][a-z0-9.@_-]*$")


def shipped_table_path() -> Path:
    return resource_path("images") / "compat.toml"


def user_table_path() -> Path:
    config = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(config) / "bundler" / "compat.toml"


def user_table_paths() -> list[Path]:
    paths = [user_table_path()] if user_table_path().is_file() else []
    for item in filter(None, os.environ.get("BUNDLER_COMPAT", "").split(os.pathsep)):
        path = Path(item).expanduser()
        if not path.is_file():
            raise UsageError(
                f"$BUNDLER_COMPAT names {path}, which is not a file.",
                hint="Point BUNDLER_COMPAT at a TOML file with [[release]] rows, or unset it.",
                path=path,
            )
        paths.append(path)
    return paths


_CACHE: dict[tuple, CompatTable] = {}


def load_table() -> CompatTable:
    """The shipped table merged with the user's rows (cached per set of file mtimes)."""
    paths = [shipped_table_path(), *user_table_paths()]
    key = tuple((str(p), p.stat().st_mtime_ns) for p in paths)
    if key not in _CACHE:
        _CACHE.clear()
        _CACHE[key] = load_table_from(*paths)
    return _CACHE[key]


def load_table_from(*paths: Path) -> CompatTable:
    """Load and validate the given files only (the first is the base), merging in order."""
    return _merge([(Path(p), _read(Path(p))) for p in paths])


def _read(path: Path) -> dict:
    return read_toml(path, hint="Fix the TOML syntax at the position given.")


def _merge(documents: list[tuple[Path, dict]]) -> CompatTable:
    base_path, base = documents[0]
    settings = {}
    for key in ("index_root", "pypi_index", "runtime_base", "cpu_devel_base"):
        settings[key] = _need_str(base_path, "the top level", base, key)
    cuda: dict[str, CudaInfo] = {}
    rocm: dict[str, RocmInfo] = {}
    releases: dict[str, Release] = {}
    sources: dict[str, str] = {}
    for path, data in documents:
        _keys(path, "the top level", data, _TOP_KEYS)
        for source, text in _table(path, "[sources]", data.get("sources", {})).items():
            if not SOURCE_ID_RE.match(source) or not isinstance(text, str) or not text.strip():
                raise _bad(path, f"[sources] {source!r}", "must name a source id with a description", 'Write id = "what and where".')
            sources[source] = text
        for key in ("index_root", "pypi_index", "runtime_base", "cpu_devel_base"):
            if key in data:
                settings[key] = _need_str(path, "the top level", data, key)
        for version, entry in _table(path, "[cuda]", data.get("cuda", {})).items():
            cuda[version] = _cuda(path, version, entry)
        for version, entry in _table(path, "[rocm]", data.get("rocm", {})).items():
            rocm[version] = _rocm(path, version, entry)
        rows = data.get("release", [])
        if not isinstance(rows, list):
            raise _bad(path, "[[release]]", "must be an array of tables", "Write each row as [[release]].")
        for index, row in enumerate(rows):
            release = _release(path, index, row)
            releases[release.torch] = release
    for release in releases.values():
        _cross_check(release, cuda, rocm, sources)
    for entry, kind in [(e, "cuda") for e in cuda.values()] + [(e, "rocm") for e in rocm.values()]:
        unknown = [s for s in entry.sources if s.split("@")[0] not in sources]
        if unknown:
            raise _bad(
                base_path,
                f'[{kind}."{entry.version}"]',
                f"names the source {unknown[0]!r}, which [sources] does not describe",
                "Add it to [sources].",
            )
    return CompatTable(cuda=cuda, rocm=rocm, releases=releases, files=[str(p) for p, _ in documents], sources=sources, **settings)


def _cuda(path: Path, version: str, entry: object) -> CudaInfo:
    where = f'[cuda."{version}"]'
    if not MINOR_RE.match(version):
        raise _bad(path, where, "is not a CUDA major.minor version", 'Name CUDA entries like [cuda."12.8"].')
    entry = _table(path, where, entry)
    _keys(path, where, entry, _CUDA_KEYS)
    for key in ("driver_toolkit", "driver_minor_compat"):
        if not DRIVER_RE.match(_need_str(path, where, entry, key)):
            raise _bad(path, where, f"{key} {entry[key]!r} is not a driver version like 570.26", "Give the Linux driver version.")
    return CudaInfo(
        version,
        entry["driver_toolkit"],
        entry["driver_minor_compat"],
        _need_str(path, where, entry, "devel_base"),
        _bool(path, where, entry, "confirmed", True),
        _str_list(path, where, entry, "sources", SOURCE_ID_RE, allow_empty=True),
    )


def _rocm(path: Path, version: str, entry: object) -> RocmInfo:
    where = f'[rocm."{version}"]'
    if not ACCELERATOR_RE.match(version):
        raise _bad(path, where, "is not a ROCm version", 'Name ROCm entries like [rocm."6.4"].')
    entry = _table(path, where, entry)
    _keys(path, where, entry, _ROCM_KEYS)
    arch = _str_list(path, where, entry, "arch", GFX_RE, allow_empty=True)
    devel_base = _need_str(path, where, entry, "devel_base")
    sources = _str_list(path, where, entry, "sources", SOURCE_ID_RE, allow_empty=True)
    return RocmInfo(version, arch, devel_base, _bool(path, where, entry, "confirmed", True), sources)


def _release(path: Path, index: int, row: object) -> Release:
    where = f"[[release]] #{index + 1}"
    row = _table(path, where, row)
    _keys(path, where, row, _RELEASE_KEYS)
    torch = _need_str(path, where, row, "torch")
    where = f"[[release]] torch {torch}"
    if not RELEASE_RE.match(torch):
        raise _bad(path, where, "torch must be an exact release like 2.9.1", "One row per patch release.")
    if not RELEASE_RE.match(_need_str(path, where, row, "torchvision")):
        raise _bad(
            path, where, f"torchvision {row['torchvision']!r} is not an exact version", f"Give the torchvision paired with torch {torch}."
        )
    if not isinstance(row.get("torchaudio"), str) or (row["torchaudio"] and not RELEASE_RE.match(row["torchaudio"])):
        raise _bad(
            path,
            where,
            f"torchaudio {row.get('torchaudio')!r} is not an exact version",
            'Give the torchaudio paired with it, or "" for none.',
        )
    if row.get("torchtext") and not (isinstance(row["torchtext"], str) and RELEASE_RE.match(row["torchtext"])):
        raise _bad(path, where, f"torchtext {row['torchtext']!r} is not an exact version", 'Give the torchtext paired with it, or "".')
    cxx_standard = row.get("cxx_standard", 17)
    if type(cxx_standard) is not int or cxx_standard not in CXX_STANDARDS:
        raise _bad(path, where, f"cxx_standard {cxx_standard!r} is not a C++ standard", "Give 14, 17, 20 or 23 (17 from torch 2.1 on).")
    for key in ("triton", "pytorch_triton_rocm", "pypi_cuda", "pypi_cuda_aarch64", "note"):
        if not isinstance(row.get(key, ""), str):
            raise _bad(path, where, f"{key} must be a string", f'Write {key} = "…" ("" when unknown).')
    if row.get("triton") and not TRITON_RE.match(row["triton"]):
        raise _bad(
            path, where, f"triton {row['triton']!r} is not a version", 'Give X.Y.Z (or ~=X.Y.Z as torch declares it), "" when unknown.'
        )
    if row.get("pytorch_triton_rocm") and not RELEASE_RE.match(row["pytorch_triton_rocm"]):
        raise _bad(path, where, f"pytorch_triton_rocm {row['pytorch_triton_rocm']!r} is not an exact version", 'Give X.Y.Z, or "".')
    for key in ("pypi_cuda", "pypi_cuda_aarch64"):
        if row.get(key) and not PYPI_BUILD_RE.match(row[key]):
            raise _bad(path, where, f"{key} {row[key]!r} is not a CUDA version or cpu", 'Give e.g. "12.8", "cpu", or "" when unknown.')
    cuda = _str_list(path, where, row, "cuda", MINOR_RE, allow_empty=True)
    cuda_aarch64 = _str_list(path, where, row, "cuda_aarch64", MINOR_RE, allow_empty=True)
    rocm = _str_list(path, where, row, "rocm", ACCELERATOR_RE, allow_empty=True)
    python = _str_list(path, where, row, "python", PYTHON_RE, allow_empty=False)
    setuptools = row.get("setuptools", "never")
    if setuptools not in SETUPTOOLS_RULES:
        raise _bad(
            path, where, f"setuptools {setuptools!r} is not one of {', '.join(SETUPTOOLS_RULES)}", "Say when torch declares setuptools."
        )
    cpu = _bool(path, where, row, "cpu", True)
    if not (cuda or rocm or cpu):
        raise _bad(path, where, "lists no build at all", "List its cuda/rocm versions or set cpu = true.")
    arch_table = _table(path, f"{where} arch", row.get("arch", {}))
    arch = {key: _str_list(path, f"{where} arch", arch_table, key, ARCH_RE, allow_empty=True) for key in arch_table}
    return Release(
        torch=torch,
        torchvision=row["torchvision"],
        torchaudio=row["torchaudio"],
        torchtext=row.get("torchtext", ""),
        cxx_standard=cxx_standard,
        triton=row.get("triton", ""),
        pytorch_triton_rocm=row.get("pytorch_triton_rocm", ""),
        cuda=cuda,
        cuda_aarch64=cuda_aarch64,
        rocm=rocm,
        cpu=cpu,
        pypi_cuda=row.get("pypi_cuda", ""),
        python=python,
        setuptools=setuptools,
        confirmed=_bool(path, where, row, "confirmed", True),
        note=row.get("note", ""),
        arch=arch,
        file=str(path),
        pypi_cuda_aarch64=row.get("pypi_cuda_aarch64", ""),
        sources=_str_list(path, where, row, "sources", SOURCE_ID_RE, allow_empty=True),
        unchecked=_str_list(path, where, row, "unchecked", re.compile("^(" + "|".join(CHECKABLE) + ")$"), allow_empty=True),
    )


def _cross_check(release: Release, cuda: dict, rocm: dict, sources: dict) -> None:
    path = Path(release.file)
    where = f"[[release]] torch {release.torch}"
    for version in dict.fromkeys(release.cuda + release.cuda_aarch64):
        if version not in cuda:
            raise _bad(
                path,
                where,
                f'names CUDA {version}, which has no [cuda."{version}"] entry',
                f'Add [cuda."{version}"] with its driver figures.',
            )
    for version in release.rocm:
        if version not in rocm:
            raise _bad(
                path, where, f'names ROCm {version}, which has no [rocm."{version}"] entry', f'Add [rocm."{version}"] with its devel_base.'
            )
    for source in release.sources:
        if source.split("@")[0] not in sources:
            raise _bad(path, where, f"names the source {source!r}, which [sources] does not describe", "Add it to [sources].")
    for key in release.arch:
        if key not in release.arch_keys():
            raise _bad(
                path,
                where,
                f"gives architectures for {key}, a build this release does not list",
                f"Builds listed: {', '.join(release.arch_keys())} (aarch64 builds as <tag>-aarch64).",
            )


# ----- validation helpers ----------------------------------------------------------
def _bad(path: Path, where: str, problem: str, hint: str) -> ProjectFileError:
    return ProjectFileError(f"compatibility table {path}: {where} {problem}.", hint=hint, path=path)


def _table(path: Path, where: str, value: object) -> dict:
    if not isinstance(value, dict):
        raise _bad(path, where, "must be a table", "See the comments at the top of images/compat.toml for the schema.")
    return value


def _keys(path: Path, where: str, table: dict, allowed: set[str]) -> None:
    unknown = sorted(set(table) - allowed)
    if unknown:
        raise _bad(path, where, f"has an unknown key {unknown[0]!r}", f"Known keys: {', '.join(sorted(allowed))}.")


def _need_str(path: Path, where: str, table: dict, key: str) -> str:
    value = table.get(key)
    if not isinstance(value, str) or not value.strip():
        raise _bad(path, where, f"needs a non-empty string {key}", f'Write {key} = "…".')
    return value


def _bool(path: Path, where: str, table: dict, key: str, default: bool) -> bool:
    value = table.get(key, default)
    if not isinstance(value, bool):
        raise _bad(path, where, f"{key} must be true or false", f"Write {key} = true or false.")
    return value


def _str_list(path: Path, where: str, table: dict, key: str, pattern: re.Pattern, *, allow_empty: bool) -> tuple[str, ...]:
    value = table.get(key, [])
    if not isinstance(value, list) or not all(isinstance(item, str) and pattern.match(item) for item in value):
        raise _bad(path, where, f"{key} must be a list of strings like {pattern.pattern!r}, got {value!r}", f"Fix {key}.")
    if not value and not allow_empty:
        raise _bad(path, where, f"{key} must not be empty", f"List at least one {key} value.")
    if len(set(value)) != len(value):
        raise _bad(path, where, f"{key} lists a value twice", f"Remove the duplicate from {key}.")
    return tuple(value)
