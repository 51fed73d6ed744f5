"""The PyTorch compatibility table as bundler queries it: releases, builds, drivers.

The rows come from images/compat.toml and the user's own files (bundler/target/
table_file.py reads and validates them). ``CompatTable.build_for`` is where an
impossible Target is refused, naming what exists.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from bundler.errors import TargetError
from bundler.target.versions import RELEASE_RE, build_name, cuda_tag, rocm_tag, version_key


@dataclass(frozen=True)
class CudaInfo:
    version: str
    driver_toolkit: str
    driver_minor_compat: str
    devel_base: str
    confirmed: bool
    sources: tuple[str, ...] = ()

    @property
    def tag(self) -> str:
        return cuda_tag(self.version)


@dataclass(frozen=True)
class RocmInfo:
    version: str
    arch: tuple[str, ...]
    devel_base: str
    confirmed: bool
    sources: tuple[str, ...] = ()

    @property
    def tag(self) -> str:
        return rocm_tag(self.version)


# Companions the table pairs with each release ("" in a row: none for that torch). torchvision and torchaudio carry
# torch's local label on PyTorch's index (+cpu, +cu128); torchtext has no GPU code, so PyPI's wheel serves every build.
LABELLED_COMPANIONS = ("torchvision", "torchaudio")
PAIRED_COMPANIONS = (*LABELLED_COMPANIONS, "torchtext")


def is_paired_build(locked: str, paired: str) -> bool:
    """Is a companion's locked version the one the Target pairs: its exact build, or any build of an unlabelled pairing?"""
    return locked == paired or ("+" not in paired and locked.split("+")[0] == paired)


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
    file: str = ""  # the table file the row was read from
    pypi_cuda_aarch64: str = ""  # CUDA of PyPI's Linux aarch64 wheel; "cpu" for a CPU wheel, "" unknown
    sources: tuple[str, ...] = ()  # ids of [sources]: where the row's facts come from
    unchecked: tuple[str, ...] = ()  # fields no source could confirm
    cuda_aarch64: tuple[str, ...] = ()  # CUDA builds for Linux aarch64 on PyTorch's index (ROCm: x86_64 only)
    torchtext: str = ""  # its last release, 0.18.0, went with torch 2.3: "" for every later torch
    cxx_standard: int = 17  # the C++ standard its headers need (torch 2.1 on: "#error C++17 or later compatible compiler")

    def builds(self, backend: str, platform: str = "linux_x86_64") -> tuple[str, ...]:
        """The accelerator versions of one backend's builds for a platform ("" for the CPU build)."""
        if backend == "cpu":
            return ("",) if self.cpu else ()
        if platform == "linux_aarch64":
            return self.cuda_aarch64 if backend == "cuda" else ()
        return self.cuda if backend == "cuda" else self.rocm

    def build_tags(self, platform: str = "linux_x86_64") -> list[str]:
        return [build_name(backend, v) for backend in ("cuda", "rocm", "cpu") for v in self.builds(backend, platform)]

    def arch_keys(self) -> list[str]:
        """The keys [release.arch] may use: the x86_64 build tags, the aarch64 ones as <tag>-aarch64."""
        return self.build_tags() + [f"{tag}-aarch64" for tag in self.build_tags("linux_aarch64")]

    def has_build(self, backend: str, accelerator: str, platform: str = "linux_x86_64") -> bool:
        return accelerator in self.builds(backend, platform)

    def pypi_build(self, platform: str) -> str:
        """The CUDA version of PyPI's own wheel for a platform ("cpu" for a CPU wheel, "" unknown)."""
        return self.pypi_cuda if platform == "linux_x86_64" else self.pypi_cuda_aarch64

    def needs_setuptools(self, python: str) -> bool:
        if self.setuptools == "always":
            return True
        return self.setuptools == "python>=3.12" and version_key(python)[:2] >= (3, 12)


@dataclass(frozen=True)
class TorchBuild:
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
    source: str = "pytorch"  # pytorch: PyTorch's index of the build; pypi: PyPI's own (unlabelled) wheel

    @property
    def extra_index_urls(self) -> list[str]:
        """The indexes after ``index_url``: PyPI for everything but torch's own packages."""
        return [] if self.source == "pypi" else [self.pypi_index]

    def labelled(self, version: str) -> str:
        return f"{version}+{self.label}" if self.label else version

    platform: str = "linux_x86_64"

    @property
    def arch(self) -> tuple[str, ...]:
        key = self.tag if self.platform == "linux_x86_64" else f"{self.tag}-aarch64"
        if key in self.release.arch:
            return self.release.arch[key]
        return self.rocm.arch if self.rocm is not None else ()

    def companions(self) -> dict[str, str]:
        """Companion distribution -> the exact version paired with this build."""
        pairs = {"torch": self.labelled(self.release.torch), "torchvision": self.labelled(self.release.torchvision)}
        if self.release.torchaudio:  # "" from 2.13: no torchaudio is paired with the release
            pairs["torchaudio"] = self.labelled(self.release.torchaudio)
        if self.release.torchtext:
            pairs["torchtext"] = self.release.torchtext
        if self.backend == "cuda" and RELEASE_RE.match(self.release.triton):  # a range (~=3.8.0) is torch's own to resolve
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
    files: list[str]  # the table files read, shipped first
    sources: dict[str, str] = field(default_factory=dict)  # source id -> what and where it is

    # ----- queries ---------------------------------------------------------------
    def release(self, torch: str) -> Release:
        if torch in self.releases:
            return self.releases[torch]
        known = self.torch_versions()
        raise TargetError(
            f"torch {torch} is not in the compatibility table (known releases: {_nearest(torch, known)}).",
            hint="Pick one of those releases, or add a [[release]] row for it in ~/.config/bundler/compat.toml "
            "(or the file named by $BUNDLER_COMPAT).",
            value=torch,
        )

    def torch_versions(self) -> list[str]:
        return sorted(self.releases, key=version_key)

    def latest_patch(self, minor: str) -> str | None:
        matches = [v for v in self.torch_versions() if v.rsplit(".", 1)[0] == minor]
        return matches[-1] if matches else None

    def default_accelerator(self, torch: str, backend: str) -> str:
        """The build a new project starts with: PyPI's own CUDA for cuda, the newest ROCm for rocm."""
        release = self.release(torch)
        if backend == "cuda":
            return release.pypi_cuda if release.pypi_cuda in release.cuda else (release.cuda[-1] if release.cuda else "")
        if backend == "rocm":
            return release.rocm[-1] if release.rocm else ""
        return ""

    def torch_versions_with(self, backend: str, accelerator: str, platform: str = "linux_x86_64") -> list[str]:
        return [v for v in self.torch_versions() if self.releases[v].has_build(backend, accelerator, platform)]

    def accelerators(self, backend: str, platform: str = "linux_x86_64") -> list[str]:
        """Every version of a backend some release builds for a platform."""
        return sorted({v for r in self.releases.values() for v in r.builds(backend, platform)}, key=version_key)

    def nearest_with(self, companion: str, target) -> Release | None:
        """The release nearest the Target's torch that pairs ``companion`` and has the Target's build, Python and platform."""
        having = [
            v
            for v in self.torch_versions()
            if getattr(self.releases[v], companion.replace("-", "_"), "")
            and self.releases[v].has_build(target.backend, target.accelerator, target.platform)
            and target.python in self.releases[v].python
        ]
        if not having:
            return None
        wanted = version_key(target.torch)
        return self.releases[min(having, key=lambda v: _distance(version_key(v), wanted))]

    def torch_for(self, companion: str, version: str) -> str:
        """The torch release a companion's version was made for ("" when neither the table nor PyTorch's numbering says).

        The table's rows first; before them, PyTorch's numbering: torchaudio 0.N.p went with
        torch 1.N.p (2.0-2.10 follow torch itself), torchvision and torchtext 0.N.p with torch
        1.(N-1).p up to 0.14, torchvision 0.15.p with torch 2.0.p, torchtext 0.15.p with 2.0.(p-1)."""
        field_name = companion.replace("-", "_")
        for release in self.releases.values():
            paired = getattr(release, field_name, "")
            if paired and RELEASE_RE.match(paired) and version_key(paired) == version_key(version):
                return release.torch
        parts = version_key(version) if RELEASE_RE.match(version) else ()
        if len(parts) != 3:
            return ""
        major, minor, patch = parts
        if companion == "torchaudio" and major == 0 and 6 <= minor <= 13:
            return f"1.{minor}.{patch}"
        if companion == "torchaudio" and major == 2 and minor <= 10:
            return version
        if companion in ("torchvision", "torchtext") and major == 0 and 6 <= minor <= 14:
            return f"1.{minor - 1}.{patch}"
        if companion == "torchvision" and (major, minor) == (0, 15):
            return f"2.0.{patch}"
        if companion == "torchtext" and (major, minor) == (0, 15) and patch >= 1:
            return f"2.0.{patch - 1}"  # 0.15.1 pins torch==2.0.0, 0.15.2 torch==2.0.1
        return ""

    def build_for(self, target) -> TorchBuild:
        """The Build for a Target; TargetError naming the valid choices when none exists."""
        release = self.release(target.torch)
        if target.torch_index == "pypi":
            self._check_pypi(release, target)
        elif not release.has_build(target.backend, target.accelerator, target.platform):
            raise self._no_such_build(release, target)
        if target.python not in release.python:
            raise TargetError(
                f"torch {target.torch} has no wheels for Python {target.python}; it supports Python {', '.join(release.python)}.",
                hint="Choose one of those with --python X.Y.",
                value=target.python,
            )
        return self._build(release, target)

    def _no_such_build(self, release: Release, target) -> TargetError:
        """The refusal of a build a release lacks, with suggestions of the same backend and platform only."""
        backend, accel, platform = target.backend, target.accelerator, target.platform
        where, kind, wanted = PLATFORM_NAMES[platform], BACKEND_NAMES[backend], build_name(backend, accel)
        own = release.builds(backend, platform)
        known = self.accelerators(backend, platform)
        if not known:
            return TargetError(
                f"PyTorch ships no {kind} build of torch for {where}.",
                hint=f"{kind} Targets run on Linux x86-64: pass --platform linux/x86_64, or choose --cuda/--cpu.",
                value=platform,
            )
        message = f"torch {release.torch} has no {wanted} build ({kind} {accel}) for {where}. " + (
            f"Its {kind} builds there: {', '.join(build_name(backend, v) for v in own)}."
            if own
            else f"It has no {kind} build for {where} at all."
        )
        others = self.torch_versions_with(backend, accel, platform)
        if others:
            message += f" torch releases with {wanted}: {_ranges(others)}."
            nearest_torch = _nearest_version(others, release.torch)
        else:
            message += f" No torch release in the table has {kind} {accel} for {where}; the {kind} versions it knows: {_ranges(known)}."
            nearest_torch = ""
        if own:
            hint = f"The nearest {kind} build of torch {release.torch}: --{backend} {_nearest_version(list(own), accel)}"
            hint += f"; or keep {kind} {accel} with --torch {nearest_torch}." if nearest_torch else "."
        elif nearest_torch:
            hint = f"Keep {kind} {accel} with --torch {nearest_torch} (the nearest torch release that has it)."
        else:
            nearest = _nearest_version(known, accel)
            having = _ranges(self.torch_versions_with(backend, nearest, platform))
            hint = f"The nearest {kind} version the table knows: --{backend} {nearest} (torch {having})."
        return TargetError(message, hint=hint + " Rows of your own go in ~/.config/bundler/compat.toml.", value=wanted)

    def _check_pypi(self, release: Release, target) -> None:
        """PyPI serves one build per torch release and platform: refuse any other, naming it."""
        served = release.pypi_build(target.platform)
        where = PLATFORM_NAMES.get(target.platform, target.platform)
        if not served:
            raise TargetError(
                f"the compatibility table does not say which build PyPI's torch {release.torch} for {where} is, so it cannot be "
                "locked from PyPI.",
                hint="Use --torch-index pytorch (PyTorch's index of the build), or run `bundler compat check` and record the "
                "release's pypi_cuda in ~/.config/bundler/compat.toml.",
                value=release.torch,
            )
        wanted = "cpu" if target.backend == "cpu" else target.accelerator
        if target.backend != "rocm" and wanted == served:
            return
        asked = {"cpu": "the CPU build", "cuda": f"CUDA {target.accelerator}", "rocm": f"ROCm {target.accelerator}"}[target.backend]
        others = [v for v in self.torch_versions() if self.releases[v].pypi_build(target.platform) == wanted]
        alternative = (
            f" PyPI's torch for {where} is {_pypi_name(wanted)} in: {_ranges(others)}." if others and target.backend != "rocm" else ""
        )
        flag = "--cpu" if served == "cpu" else f"--cuda {served}"
        raise TargetError(
            f"{'PyPI has no ROCm build of torch: ' if target.backend == 'rocm' else ''}PyPI's torch {release.torch} for {where} is "
            f"{_pypi_name(served)}, not {asked}.{alternative}",
            hint=f"Lock it from PyPI with {flag} --torch-index pypi, or take {asked} from PyTorch's own index with --torch-index pytorch.",
            value=build_name(target.backend, target.accelerator),
        )

    def _build(self, release: Release, target) -> TorchBuild:
        backend, accel = target.backend, target.accelerator
        if target.torch_index == "pypi":  # PyPI's wheels carry no local label
            tag = build_name(backend, accel)
            cuda = self.cuda.get(accel)
            return TorchBuild(
                release, backend, accel, tag, "", self.pypi_index, self.pypi_index, cuda=cuda, source="pypi", platform=target.platform
            )
        if backend == "cuda":
            tag, info = cuda_tag(accel), self.cuda.get(accel)
            return TorchBuild(
                release, backend, accel, tag, tag, f"{self.index_root}/{tag}", self.pypi_index, cuda=info, platform=target.platform
            )
        if backend == "rocm":
            tag = rocm_tag(accel)
            return TorchBuild(release, backend, accel, tag, tag, f"{self.index_root}/{tag}", self.pypi_index, rocm=self.rocm.get(accel))
        # PyTorch's aarch64 CPU wheels carry no local label; the x86_64 ones are +cpu.
        label = "cpu" if target.platform == "linux_x86_64" else ""
        return TorchBuild(release, "cpu", "", "cpu", label, f"{self.index_root}/cpu", self.pypi_index, platform=target.platform)

    def base_images(self, build: TorchBuild, python: str) -> dict[str, str]:
        runtime = self.runtime_base.format(python=python)
        if build.backend == "cuda":
            devel = build.cuda.devel_base if build.cuda else ""
        elif build.backend == "rocm":
            devel = build.rocm.devel_base if build.rocm else ""
        else:
            devel = self.cpu_devel_base.format(python=python)
        return {"runtime": runtime, "devel": devel}


# ----- helpers of the messages -------------------------------------------------------
PLATFORM_NAMES = {"linux_x86_64": "Linux x86-64", "linux_aarch64": "Linux aarch64"}
BACKEND_NAMES = {"cuda": "CUDA", "rocm": "ROCm", "cpu": "CPU"}


def _nearest_version(versions: list[str], wanted: str) -> str:
    """The lowest version at or above ``wanted``, else the highest below (an old driver is not sent to the newest)."""
    ordered = sorted(versions, key=version_key)
    above = [v for v in ordered if version_key(v) >= version_key(wanted)]
    return above[0] if above else ordered[-1]


def _distance(release: tuple[int, ...], wanted: tuple[int, ...]) -> tuple[int, ...]:
    """How far a release is from ``wanted``: minor releases apart, an older one first, then its latest patch."""
    return (abs(release[0] - wanted[0]), abs(release[1] - wanted[1]), int(release > wanted), -release[2])


def _pypi_name(build: str) -> str:
    return "the CPU build" if build == "cpu" else f"the CUDA {build} build ({cuda_tag(build)})"


def _ranges(versions: list[str]) -> str:
    """All the versions when few, else the span and the latest three."""
    return ", ".join(versions) if len(versions) <= 6 else f"{versions[0]} … {versions[-1]} ({', '.join(versions[-3:])} the latest)"


def _nearest(version: str, known: list[str]) -> str:
    prefix = version.rsplit(".", 1)[0]
    same_minor = [v for v in known if v.startswith(prefix + ".")]
    if same_minor:
        return ", ".join(same_minor)
    return f"{known[0]} … {known[-1]}" if known else "none"
