"""The builder image: the Target's base image plus the compilers and system packages a source archive builds with.

A pure-Python archive builds in the base image as it is. One with C, C++, Cython, Fortran or
Rust sources builds in ``bundler/builder:<key>``: the base image plus the compilers it needs
from the distribution's mirror (build-essential, pkg-config, gfortran, cargo), the bundle's
``[build] system_packages`` (the headers and libraries it compiles against), and Python's
headers when the base lacks them. It is made once per base image, Python and package list,
listed and pruned by `bundler cache`. It lives on the engine floor because two floors run in
it: the lock, which prepares a torch-compiling archive's metadata where its build will run
(lock/torchprobe.py), and the image build, which makes the wheel (image/builder.py).
"""

from __future__ import annotations

import hashlib
import io
import os
import tarfile
from collections.abc import Callable, Sequence

from bundler.engine.base import BuildFailed, Engine, EngineFailure
from bundler.engine.host import BaseImage
from bundler.errors import BuildError

BUILDER_REPOSITORY = "bundler/builder"
BUILDER_LABEL = "io.bundler.builder.key"  # under image/labels.py's LABEL_PREFIX (tests/test_sdists.py keeps them together)
RECIPE = "1"  # bump when the builder Dockerfile below changes meaning
COMPILERS = {  # what a source file needs -> Debian packages
    "c": ("build-essential", "pkg-config"),
    "fortran": ("build-essential", "gfortran"),
    "rust": ("build-essential", "cargo"),
}
_SUFFIXES = {".c": "c", ".cc": "c", ".cpp": "c", ".cxx": "c", ".pyx": "c", ".f": "fortran", ".f90": "fortran", ".f95": "fortran"}
Say = Callable[[str], None]


def compilers_for(names: Sequence[str]) -> list[str]:
    """The Debian packages source files by these names call for (an archive's members, a project's files)."""
    kinds = set()
    for name in names:
        lower = name.lower()
        if lower == "cargo.toml" or lower.endswith("/cargo.toml"):
            kinds.add("rust")
        suffix = os.path.splitext(lower)[1]
        if suffix in _SUFFIXES:
            kinds.add(_SUFFIXES[suffix])
    return sorted({package for kind in kinds for package in COMPILERS[kind]})


def archive_packages(names: Sequence[str], system_packages: Sequence[str]) -> list[str]:
    """What an archive with these members builds with: its compilers, and the bundle's system packages when it compiles
    anything ([] for pure Python, which builds in the base image as it is)."""
    compilers = compilers_for(names)
    return sorted(set(compilers) | set(system_packages)) if compilers else []


def builder_dockerfile(base: str, python: str, packages: Sequence[str], key: str) -> str:
    include = f"$({python} -c 'import sysconfig; print(sysconfig.get_paths()[\"include\"])')/Python.h"
    return "\n".join(
        [
            f"FROM {base}",
            "# hadolint ignore=DL3008",  # the mirror's current packages: the builder is not reproducible, its wheel is
            "RUN apt-get update \\",
            f" && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends {' '.join(packages)} \\",
            f' && if [ ! -f "{include}" ]; then DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends'
            f" {python}-dev; fi \\",
            " && rm -rf /var/lib/apt/lists/*",
            f'LABEL {BUILDER_LABEL}="{key}"',
            "",
        ]
    )


def builder_tag(base: BaseImage, python: str, packages: Sequence[str]) -> tuple[str, str]:
    """(tag, key) of the builder image for a base, a Python and packages."""
    key = hashlib.sha256("\0".join((RECIPE, base.image_id, python, *packages)).encode()).hexdigest()
    return f"{BUILDER_REPOSITORY}:{key[:24]}", key


def builder_image(engine: Engine, base: BaseImage, python: str, packages: Sequence[str], say: Say) -> str:
    """The image to build in: the base itself, or ``bundler/builder:<key>`` with ``packages``; BuildError naming the base
    when the distribution's mirror cannot provide them."""
    if not packages:
        return base.image_id
    tag, key = builder_tag(base, python, packages)
    found = engine.image(tag)
    if found is not None:
        return found.id
    say(f"Builder image {tag}: {base.reference} + {', '.join(packages)} from the distribution's mirror…")
    context = _one_file_context("Dockerfile", builder_dockerfile(base.reference, python, packages, key).encode())
    try:
        return engine.build(context, on_line=lambda line: None, network_mode=None, tag=tag)
    except (BuildFailed, EngineFailure) as error:
        log = error.log[-8:] if isinstance(error, BuildFailed) else []
        raise BuildError(
            f"the builder image for {base.reference} could not be made: {error.explanation.strip()[:300]}\n  " + "\n  ".join(log),
            hint="It installs compilers and [build] system_packages with apt-get from the base image's distribution mirror: "
            "the base must be Debian or Ubuntu, its mirror reachable from a build, and each name a package of that release "
            "(packages.debian.org finds it).",
            value=base.reference,
        ) from None


def _one_file_context(name: str, data: bytes) -> io.BytesIO:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        info = tarfile.TarInfo(name)
        info.size, info.mode = len(data), 0o644
        tar.addfile(info, io.BytesIO(data))
    buffer.seek(0)
    return buffer
