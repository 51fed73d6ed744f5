"""The PyTorch compatibility table (images/compat.toml): load, validate, query.

The shipped table is merged with the user's own rows — ``$XDG_CONFIG_HOME/bundler/
compat.toml`` and then the file(s) named by ``$BUNDLER_COMPAT`` (``os.pathsep``
separated) — each validated the same way; a user ``[[release]]`` row replaces the shipped
row for the same torch version, a ``[cuda."X.Y"]``/``[rocm."X.Y"]`` entry replaces that
entry. ``check_target`` is where an impossible Target is refused, naming what exists.
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from bundler.errors import ProjectFileError, TargetError, UsageError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

VERSION_RE = re.compile(r"^\d+\.\d+\.\d+$")
MINOR_RE = re.compile(r"^\d+\.\d+$")
ACCEL_RE = re.compile(r"^\d+\.\d+(\.\d+)?$")
PYTHON_RE = re.compile(r"^3\.\d{1,2}$")
DRIVER_RE = re.compile(r"^\d+(\.\d+){0,2}$")
ARCH_RE = re.compile(r"^(sm_\d+a?|compute_\d+|gfx[0-9a-f]+)$")
GFX_RE = re.compile(r"^gfx[0-9a-f]+$")
SETUPTOOLS_RULES = ("never", "python>=3.12", "always")

_TOP_KEYS = {"schema", "index_root", "pypi_index", "runtime_base", "cpu_devel_base", "cuda", "rocm", "release"}
_CUDA_KEYS = {"driver_toolkit", "driver_minor_compat", "devel_base", "confirmed"}
_ROCM_KEYS = {"arch", "devel_base", "confirmed"}
_RELEASE_KEYS = {
    "torch", "torchvision", "torchaudio", "triton", "pytorch_triton_rocm", "cuda", "rocm", "cpu",
    "pypi_cuda", "python", "setuptools", "confirmed", "note", "arch",
}


@dataclass(frozen=True)
class CudaInfo:
    version: str
    driver_toolkit: str
    driver_minor_compat: str
    devel_base: str
    confirmed: bool

    @property
    def tag(self) -> str:
        return cuda_tag(self.version)


@dataclass(frozen=True)
class RocmInfo:
    version: str
    arch: tuple[str, ...]
    devel_base: str
    confirmed: bool

    @property
    def tag(self) -> str:
        return rocm_tag(self.version)


@dataclass(frozen=True)
class Release:
    torch: str
    torchvision: str
    torchaudio: str
    triton: str
    pytorch_triton_rocm: str
    cuda: tuple[str, ...]
    rocm: tuple[str, ...]
    cpu: bool
    pypi_cuda: str
    python: tuple[str, ...]
    setuptools: str
    confirmed: bool
    note: str = ""
    arch: dict[str, tuple[str, ...]] = field(default_factory=dict)
    source: str = ""

    def build_tags(self) -> list[str]:
        tags = [cuda_tag(v) for v in self.cuda] + [rocm_tag(v) for v in self.rocm]
        return tags + (["cpu"] if self.cpu else [])

    def has_build(self, backend: str, accelerator: str) -> bool:
        if backend == "cpu":
            return self.cpu
        return accelerator in (self.cuda if backend == "cuda" else self.rocm)

    def needs_setuptools(self, python: str) -> bool:
        if self.setuptools == "always":
            return True
        return self.setuptools == "python>=3.12" and _minor_key(python) >= (3, 12)


@dataclass(frozen=True)
class Build:
    """One concrete PyTorch build for a Target: where it comes from and what it pins."""

    release: Release
    backend: str
    accelerator: str
    tag: str
    label: str  # local version label without '+', '' for an unlabelled wheel
    index_url: str
    pypi_index: str
    cuda: CudaInfo | None = None
    rocm: RocmInfo | None = None

    def labelled(self, version: str) -> str:
        return f"{version}+{self.label}" if self.label else version

    @property
    def arch(self) -> tuple[str, ...]:
        if self.tag in self.release.arch:
            return self.release.arch[self.tag]
        return self.rocm.arch if self.rocm is not None else ()

    def companions(self) -> dict[str, str]:
        """Companion distribution -> the exact version paired with this build."""
        pairs = {
            "torch": self.labelled(self.release.torch),
            "torchvision": self.labelled(self.release.torchvision),
            "torchaudio": self.labelled(self.release.torchaudio),
        }
        if self.backend == "cuda" and self.release.triton:
            pairs["triton"] = self.release.triton
        if self.backend == "rocm" and self.release.pytorch_triton_rocm:
            pairs["pytorch-triton-rocm"] = self.release.pytorch_triton_rocm
        return pairs


@dataclass
class CompatTable:
    index_root: str
    pypi_index: str
    runtime_base: str
    cpu_devel_base: str
    cuda: dict[str, CudaInfo]
    rocm: dict[str, RocmInfo]
    releases: dict[str, Release]
    sources: list[str]

    # ----- queries ---------------------------------------------------------------
    def release(self, torch: str) -> Release:
        if torch in self.releases:
            return self.releases[torch]
        known = self.torch_versions()
        raise TargetError(
            f"torch {torch} is not in the compatibility table (known releases: {_nearest(torch, known)}).",
            hint="Pick one of those releases, or add a [[release]] row for it in "
            f"{user_table_path()} (or the file named by $BUNDLER_COMPAT).",
            value=torch,
        )

    def torch_versions(self) -> list[str]:
        return sorted(self.releases, key=_version_key)

    def latest_patch(self, minor: str) -> str | None:
        matches = [v for v in self.torch_versions() if v.rsplit(".", 1)[0] == minor]
        return matches[-1] if matches else None

    def torch_versions_with(self, backend: str, accelerator: str) -> list[str]:
        return [v for v in self.torch_versions() if self.releases[v].has_build(backend, accelerator)]

    def build_for(self, target) -> Build:
        """The Build for a Target; TargetError naming the valid choices when none exists."""
        release = self.release(target.torch)
        wanted = build_name(target.backend, target.accelerator)
        if not release.has_build(target.backend, target.accelerator):
            others = self.torch_versions_with(target.backend, target.accelerator)
            having = _ranges(others) if others else "no torch release in the table"
            raise TargetError(
                f"torch {target.torch} has no {wanted} build. Builds that exist for torch {target.torch}: "
                f"{', '.join(release.build_tags())}. torch releases with a {wanted} build: {having}.",
                hint=f"Choose one of the builds of torch {target.torch} (e.g. --{_flag_for(release)}) "
                f"or a torch release that has {wanted} (--torch VER).",
                value=wanted,
            )
        if target.python not in release.python:
            raise TargetError(
                f"torch {target.torch} has no wheels for Python {target.python}; it supports Python "
                f"{', '.join(release.python)}.",
                hint="Choose one of those with --python X.Y.",
                value=target.python,
            )
        if target.backend == "rocm" and target.platform != "linux_x86_64":
            raise TargetError(
                f"ROCm builds of torch exist for linux_x86_64 only, not {target.platform}.",
                hint="Use platform = \"linux_x86_64\" for a ROCm target, or --cuda/--cpu.",
                value=target.platform,
            )
        return self._build(release, target)

    def _build(self, release: Release, target) -> Build:
        backend, accel = target.backend, target.accelerator
        if backend == "cuda":
            tag, info = cuda_tag(accel), self.cuda.get(accel)
            return Build(release, backend, accel, tag, tag, f"{self.index_root}/{tag}", self.pypi_index, cuda=info)
        if backend == "rocm":
            tag = rocm_tag(accel)
            return Build(release, backend, accel, tag, tag, f"{self.index_root}/{tag}", self.pypi_index, rocm=self.rocm.get(accel))
        # PyTorch's aarch64 CPU wheels carry no local label; the x86_64 ones are +cpu.
        label = "cpu" if target.platform == "linux_x86_64" else ""
        return Build(release, "cpu", "", "cpu", label, f"{self.index_root}/cpu", self.pypi_index)

    def base_images(self, build: Build, python: str) -> dict[str, str]:
        runtime = self.runtime_base.format(python=python)
        if build.backend == "cuda":
            devel = build.cuda.devel_base if build.cuda else ""
        elif build.backend == "rocm":
            devel = build.rocm.devel_base if build.rocm else ""
        else:
            devel = self.cpu_devel_base.format(python=python)
        return {"runtime": runtime, "devel": devel}


# ----- naming ----------------------------------------------------------------------
def cuda_tag(version: str) -> str:
    return "cu" + version.replace(".", "")


def rocm_tag(version: str) -> str:
    return "rocm" + version


def build_name(backend: str, accelerator: str) -> str:
    if backend == "cpu":
        return "cpu"
    return cuda_tag(accelerator) if backend == "cuda" else rocm_tag(accelerator)


def _flag_for(release: Release) -> str:
    if release.cuda:
        return f"cuda {release.cuda[-1]}"
    if release.rocm:
        return f"rocm {release.rocm[-1]}"
    return "cpu"


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


def _minor_key(python: str) -> tuple[int, int]:
    major, minor = python.split(".")[:2]
    return int(major), int(minor)


def _ranges(versions: list[str]) -> str:
    """All the versions when few, else the span and the latest three."""
    return ", ".join(versions) if len(versions) <= 6 else f"{versions[0]} … {versions[-1]} ({', '.join(versions[-3:])} the latest)"


def _nearest(version: str, known: list[str]) -> str:
    prefix = version.rsplit(".", 1)[0]
    same_minor = [v for v in known if v.startswith(prefix + ".")]
    if same_minor:
        return ", ".join(same_minor)
    return f"{known[0]} … {known[-1]}" if known else "none"


# ----- loading ---------------------------------------------------------------------
def shipped_table_path() -> Path:
    here = Path(__file__).resolve().parent
    for candidate in (here / "_data" / "images" / "compat.toml", here.parent / "images" / "compat.toml"):
        if candidate.is_file():
            return candidate
    raise ProjectFileError(
        "the shipped compatibility table images/compat.toml is missing from this installation.",
        hint="Reinstall bundler (pip install --force-reinstall bundler).",
    )


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
        _CACHE[key] = _merge([(p, _read(p)) for p in paths])
    return _CACHE[key]


def load_table_from(*paths: Path) -> CompatTable:
    """Load and validate the given files only (the first is the base), merging in order."""
    return _merge([(Path(p), _read(Path(p))) for p in paths])


def _read(path: Path) -> dict:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise ProjectFileError(
            f"compatibility table {path} cannot be read: {error}.",
            hint="Fix the TOML syntax at the position given.",
            path=path,
        ) from None


def _merge(documents: list[tuple[Path, dict]]) -> CompatTable:
    base_path, base = documents[0]
    settings = {}
    for key in ("index_root", "pypi_index", "runtime_base", "cpu_devel_base"):
        settings[key] = _need_str(base_path, "the top level", base, key)
    cuda: dict[str, CudaInfo] = {}
    rocm: dict[str, RocmInfo] = {}
    releases: dict[str, Release] = {}
    for path, data in documents:
        _keys(path, "the top level", data, _TOP_KEYS)
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
        _cross_check(release, cuda, rocm)
    return CompatTable(cuda=cuda, rocm=rocm, releases=releases, sources=[str(p) for p, _ in documents], **settings)


def _cuda(path: Path, version: str, entry: object) -> CudaInfo:
    where = f'[cuda."{version}"]'
    if not MINOR_RE.match(version):
        raise _bad(path, where, "is not a CUDA major.minor version", 'Name CUDA entries like [cuda."12.8"].')
    entry = _table(path, where, entry)
    _keys(path, where, entry, _CUDA_KEYS)
    for key in ("driver_toolkit", "driver_minor_compat"):
        if not DRIVER_RE.match(_need_str(path, where, entry, key)):
            raise _bad(path, where, f"{key} {entry[key]!r} is not a driver version like 570.26", "Give the Linux driver version.")
    return CudaInfo(version, entry["driver_toolkit"], entry["driver_minor_compat"], _need_str(path, where, entry, "devel_base"), _bool(path, where, entry, "confirmed", True))


def _rocm(path: Path, version: str, entry: object) -> RocmInfo:
    where = f'[rocm."{version}"]'
    if not ACCEL_RE.match(version):
        raise _bad(path, where, "is not a ROCm version", 'Name ROCm entries like [rocm."6.4"].')
    entry = _table(path, where, entry)
    _keys(path, where, entry, _ROCM_KEYS)
    arch = _str_list(path, where, entry, "arch", GFX_RE, allow_empty=True)
    return RocmInfo(version, arch, _need_str(path, where, entry, "devel_base"), _bool(path, where, entry, "confirmed", True))


def _release(path: Path, index: int, row: object) -> Release:
    where = f"[[release]] #{index + 1}"
    row = _table(path, where, row)
    _keys(path, where, row, _RELEASE_KEYS)
    torch = _need_str(path, where, row, "torch")
    where = f"[[release]] torch {torch}"
    if not VERSION_RE.match(torch):
        raise _bad(path, where, "torch must be an exact release like 2.9.1", "One row per patch release.")
    for key in ("torchvision", "torchaudio"):
        if not VERSION_RE.match(_need_str(path, where, row, key)):
            raise _bad(path, where, f"{key} {row[key]!r} is not an exact version", f"Give the {key} release paired with torch {torch}.")
    for key in ("triton", "pytorch_triton_rocm", "pypi_cuda", "note"):
        if not isinstance(row.get(key, ""), str):
            raise _bad(path, where, f"{key} must be a string", f'Write {key} = "…" ("" when unknown).')
    for key in ("triton", "pytorch_triton_rocm"):
        if row.get(key) and not VERSION_RE.match(row[key]):
            raise _bad(path, where, f"{key} {row[key]!r} is not an exact version", 'Give X.Y.Z, or "" when unknown.')
    if row.get("pypi_cuda") and not MINOR_RE.match(row["pypi_cuda"]):
        raise _bad(path, where, f"pypi_cuda {row['pypi_cuda']!r} is not a CUDA version", 'Give e.g. "12.8", or "" when unknown.')
    cuda = _str_list(path, where, row, "cuda", MINOR_RE, allow_empty=True)
    rocm = _str_list(path, where, row, "rocm", ACCEL_RE, allow_empty=True)
    python = _str_list(path, where, row, "python", PYTHON_RE, allow_empty=False)
    setuptools = row.get("setuptools", "never")
    if setuptools not in SETUPTOOLS_RULES:
        raise _bad(path, where, f"setuptools {setuptools!r} is not one of {', '.join(SETUPTOOLS_RULES)}", "Say when torch declares setuptools.")
    cpu = _bool(path, where, row, "cpu", True)
    if not (cuda or rocm or cpu):
        raise _bad(path, where, "lists no build at all", "List its cuda/rocm versions or set cpu = true.")
    arch_table = _table(path, f"{where} arch", row.get("arch", {}))
    arch = {tag: _str_list(path, f"{where} arch", arch_table, tag, ARCH_RE, allow_empty=True) for tag in arch_table}
    return Release(
        torch=torch, torchvision=row["torchvision"], torchaudio=row["torchaudio"],
        triton=row.get("triton", ""), pytorch_triton_rocm=row.get("pytorch_triton_rocm", ""),
        cuda=cuda, rocm=rocm, cpu=cpu, pypi_cuda=row.get("pypi_cuda", ""), python=python,
        setuptools=setuptools, confirmed=_bool(path, where, row, "confirmed", True),
        note=row.get("note", ""), arch=arch, source=str(path),
    )


def _cross_check(release: Release, cuda: dict, rocm: dict) -> None:
    path = Path(release.source)
    where = f"[[release]] torch {release.torch}"
    for version in release.cuda:
        if version not in cuda:
            raise _bad(path, where, f"names CUDA {version}, which has no [cuda.\"{version}\"] entry", f'Add [cuda."{version}"] with its driver figures.')
    for version in release.rocm:
        if version not in rocm:
            raise _bad(path, where, f"names ROCm {version}, which has no [rocm.\"{version}\"] entry", f'Add [rocm."{version}"] with its devel_base.')
    for tag in release.arch:
        if tag not in release.build_tags():
            raise _bad(path, where, f"gives architectures for {tag}, a build this release does not list", f"Builds listed: {', '.join(release.build_tags())}.")


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
