"""The project's own package as a wheel (bundle.toml ``[build] install_project = true``).

Built with the project's own PEP 517 backend (``pip wheel --no-deps``) in the builder
container on the Target's base, from exactly the files the image's code layer gets (the
.dockerignore applied, secrets withheld, links copied as links and never followed). The
wheel is checked (one wheel, tags that fit the Target), stored in the content-addressed
cache under its sha256, and remembered by a key over those files and the Target, so an
unchanged tree is not built again. The image installs it in the code layer, after the
dependency image, with ``--no-index --no-deps --require-hashes``: its dependencies are the
lock's, a code-only change rebuilds only the code layers, and its console scripts land in
the venv's bin/ (on PATH).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from packaging.utils import parse_wheel_filename
from packaging.version import InvalidVersion, Version

from bundler import tomlcompat
from bundler.engine import builderimage
from bundler.errors import BuildError
from bundler.fsutil import atomic_write_text, sha256_file
from bundler.image import builder, layout
from bundler.image.context import ProjectFiles
from bundler.image.dockerfile import run_step
from bundler.image.labels import git_output
from bundler.image.wheelbuild import store, target_key
from bundler.image.wheelhouse import cache_root
from bundler.lock.sources import target_tags
from bundler.pipsettings import cache_dir

RECIPE = "1"  # bump when what goes into the key, or how the wheel is built, changes meaning
REQUIREMENTS = "requirements.txt"  # beside the wheel in the image: the one line pip installs, with its hash


@dataclass(frozen=True)
class ProjectWheel:
    path: Path  # in the wheel cache
    sha256: str
    reused: bool  # taken from the cache: the tree and Target were built before

    @property
    def filename(self) -> str:
        return self.path.name

    def requirements_text(self) -> str:
        return f"{layout.PROJECT_WHEEL}/{self.filename} --hash=sha256:{self.sha256}\n"

    def as_dict(self) -> dict:
        return {"file": self.filename, "sha256": self.sha256, "reused": self.reused}


VCS_VERSIONED = re.compile(r"^(setuptools[-_]scm|hatch[-_]vcs)\b", re.IGNORECASE)  # backends that read the version from git


def vcs_version(root: Path) -> dict[str, str]:
    """The builder's environment for a backend that reads its version from git, which the build never
    sees (.git stays out of the image): the version git describes here, through setuptools-scm's own
    override (hatch-vcs uses it too). {} for any other backend."""
    try:
        requires = tomlcompat.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["build-system"]["requires"]
    except (OSError, ValueError, KeyError, TypeError):
        return {}
    if not any(isinstance(item, str) and VCS_VERSIONED.match(item.strip()) for item in requires):
        return {}
    return {"SETUPTOOLS_SCM_PRETEND_VERSION": described_version(root)}


def described_version(root: Path) -> str:
    """``git describe``'s answer as PEP 440: tag 1.2 -> 1.2; 3 commits on -> 1.2.post3+gSHA; no tag -> 0+gSHA; no git -> 0+unknown."""
    described = git_output(root, "describe", "--tags", "--long", "--always")
    match = re.fullmatch(r"v?(.+)-(\d+)-g([0-9a-f]+)", described)
    if match:
        tag, distance, commit = match.groups()
        candidate = tag if distance == "0" else f"{tag}.post{distance}+g{commit}"
        try:
            return str(Version(candidate))
        except InvalidVersion:
            return f"0+g{commit}"
    return f"0+g{described}" if re.fullmatch(r"[0-9a-f]{4,40}", described) else "0+unknown"


def tree_key(files: ProjectFiles, target, base_reference: str, environment: dict[str, str]) -> str:
    """What the wheel is a function of: every file sent (path, kind, content), the Target and the builder's environment."""
    digest = hashlib.sha256(f"{RECIPE}\0{target_key(target, base_reference)}\0{json.dumps(environment, sort_keys=True)}\0".encode())
    for relative in files.included:
        path = files.root / relative
        content = os.readlink(path).encode() if path.is_symlink() else sha256_file(path).encode()
        digest.update(f"{relative}\0{'link' if path.is_symlink() else 'file'}\0".encode() + content + b"\0")
    return digest.hexdigest()


def project_wheel(bundle, files: ProjectFiles, engine, base, say=lambda text: None) -> ProjectWheel:
    """The project's wheel for this tree and Target: from the cache, else built in the builder container."""
    environment = vcs_version(bundle.root)
    key = tree_key(files, bundle.target, base.reference, environment)
    record = cache_dir() / "project-wheels" / key[:2] / f"{key}.json"
    cached = _cached(record)
    if cached is not None:
        return ProjectWheel(cached[0], cached[1], reused=True)
    with tempfile.TemporaryDirectory(prefix="bundler-project-") as work:
        tree = Path(work) / "project"
        copy_tree(files, tree)
        image = builderimage.builder_image(engine, base, f"python{bundle.target.python}", builderimage.compilers_for(files.included), say)
        python = f"python{bundle.target.python}"
        wheel, _ = builder.build_tree_in_container(engine, image, python, tree, bundle.name, say, environment)
        try:
            check_wheel(wheel, bundle)
            digest = sha256_file(wheel)
            stored = store(wheel, digest)
        finally:
            shutil.rmtree(wheel.parent, ignore_errors=True)
    record.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(record, json.dumps({"file": stored.name, "sha256": digest}, indent=2) + "\n")
    return ProjectWheel(stored, digest, reused=False)


def copy_tree(files: ProjectFiles, dest: Path) -> None:
    """The files the code layer gets, and only those, under ``dest`` (a link stays a link)."""
    for relative in files.included:
        source, target = files.root / relative, dest / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_symlink():
            os.symlink(os.readlink(source), target)
        else:
            shutil.copyfile(source, target)
            shutil.copymode(source, target)


def check_wheel(wheel: Path, bundle) -> None:
    _, _, _, tags = parse_wheel_filename(wheel.name)
    if not tags & target_tags(bundle.target):
        raise BuildError(
            f"the project's own wheel {wheel.name} does not fit CPython {bundle.target.python} on {bundle.target.platform}.",
            hint="The base image's Python differs from the Target's: check [target] python and base_image in bundle.toml.",
            value=wheel.name,
        )


def _cached(record: Path) -> tuple[Path, str] | None:
    try:
        data = json.loads(record.read_text(encoding="utf-8"))
        digest, name = str(data["sha256"]), str(data["file"])
    except (OSError, ValueError, KeyError):
        return None
    path = cache_root() / digest[:2] / digest / name
    if path.is_file() and sha256_file(path) == digest:
        return path, digest
    return None


def install_step() -> str:
    """The final Dockerfile's steps that install the wheel sent in the context's ``wheel/`` tree:
    as root (the venv is root's), offline, hash-checked, no dependencies; then back to the bundle's user."""
    pip = f"{layout.PYTHON} -m pip"
    install = run_step(
        [
            "export PIP_CONFIG_FILE=/dev/null PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONDONTWRITEBYTECODE=1",
            f"{pip} install --no-index --no-deps --require-hashes --no-compile --no-cache-dir -r {layout.PROJECT_WHEEL}/{REQUIREMENTS}",
        ]
    )
    return f"USER 0:0\nCOPY wheel/ /\n{install}\nUSER {layout.UID}:{layout.UID}"
