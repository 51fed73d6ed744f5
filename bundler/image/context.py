"""The build context: the project's files through .dockerignore rules, secrets kept out.

Rules are matched as the Docker CLI matches .dockerignore (engine/dockerignore.py:
patterns relative to the project, ``**`` across folders, a matched folder
excludes what is under it, ``!pattern`` re-includes, the last matching rule wins).
Bundler adds defaults before the project's rules (run outputs, version control, caches,
notebook checkpoints, virtual environments) and applies its secret rules *after* them:
a secret-looking file is never sent, even when a ``!`` rule re-includes it, and every
one left out is listed so the user sees what was withheld.

The context is a tar written by bundler itself, sorted,
with fixed owners and one file time (layout.FILE_TIME), so that the engine's layer cache
sees only content changes and the layers it commits are the same from build to build.
"""

from __future__ import annotations

import io
import os
import tarfile
from dataclasses import dataclass, field
from pathlib import Path

from bundler.contracts.secrets import looks_secret
from bundler.image import layout
from bundler.resources import diagnostics_folder, resource_path
from bundler.target.bundle import Bundle

DOCKERIGNORE = ".dockerignore"
# Left out of every context, whatever .dockerignore says first (a later `!` may re-include).
DEFAULT_IGNORES = (
    "runs",
    ".git",
    ".hg",
    ".svn",
    "**/__pycache__",
    "**/*.py[cod]",
    "**/.ipynb_checkpoints",
    ".venv",
    "venv",
    "**/.mypy_cache",
    "**/.pytest_cache",
    "**/.ruff_cache",
    ".cache",
    ".tox",
    "**/.DS_Store",
    ".bundler",  # bundler's own state: backups of rewritten files, the stored template render
)


def ignore_patterns(root: Path) -> list[str]:
    """Bundler's defaults, then the project's .dockerignore lines (comments and blanks dropped)."""
    lines = list(DEFAULT_IGNORES)
    ignore_file = Path(root) / DOCKERIGNORE
    if ignore_file.is_file():
        lines += ignore_file.read_text(encoding="utf-8", errors="replace").splitlines()
    return clean_patterns(lines)


def clean_patterns(lines: list[str]) -> list[str]:
    return [line.strip() for line in lines if line.strip() and not line.strip().startswith("#")]


def is_ignored(patterns: list[str], relative: str) -> bool:
    """Docker's rule for one path: the last matching pattern wins, a folder's match covers its files."""
    from bundler.engine.dockerignore import matcher

    return matcher(patterns)(relative)


@dataclass
class ProjectFiles:
    """What of the project goes into the context, and what was left out."""

    root: Path
    included: list[str] = field(default_factory=list)  # posix paths relative to root, sorted
    secrets: list[str] = field(default_factory=list)  # left out because they look secret
    ignored_count: int = 0
    included_bytes: int = 0


def collect(root: Path) -> ProjectFiles:
    """Every file of the project is included, ignored (Docker's own matching), or withheld as a secret."""
    from bundler.engine.dockerignore import kept_paths

    root = Path(root)
    kept = kept_paths(str(root), ignore_patterns(root), ignore_file=DOCKERIGNORE)
    result = ProjectFiles(root)
    for folder, dirs, files in os.walk(root):
        dirs.sort()
        base = Path(folder).relative_to(root).as_posix()
        for name in sorted(files) + [d for d in dirs if os.path.islink(os.path.join(folder, d))]:
            relative = name if base == "." else f"{base}/{name}"
            path = root / relative
            size = path.lstat().st_size
            if looks_secret(relative, path):
                result.secrets.append(relative)
            elif relative in kept:
                result.included.append(relative)
                result.included_bytes += size
            else:
                result.ignored_count += 1
    result.included.sort()
    result.secrets.sort()
    return result


class ContextTar:
    """A build context tar with fixed owners and times, written into a file or memory.

    Every folder gets an entry of its own before its first file: a folder the engine had to
    create would carry the time of the extraction, and COPY would commit that time.
    """

    def __init__(self, fileobj) -> None:
        self.fileobj = fileobj
        self.tar = tarfile.open(fileobj=fileobj, mode="w", format=tarfile.PAX_FORMAT)
        self._folders: set[str] = set()

    def add_folder(self, arcname: str) -> None:
        self._add_folders(arcname + "/")

    def _add_folders(self, arcname: str) -> None:
        """An entry for every folder above ``arcname`` not yet written."""
        parts = arcname.split("/")[:-1]
        for end in range(1, len(parts) + 1):
            folder = "/".join(parts[:end])
            if folder not in self._folders:
                self._folders.add(folder)
                info = tarfile.TarInfo(folder)
                info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, layout.FILE_TIME
                self.tar.addfile(info)

    def add_file(self, arcname: str, path: Path) -> None:
        self._add_folders(arcname)
        info = self.tar.gettarinfo(str(path), arcname=arcname)
        info.uid = info.gid = 0
        info.uname = info.gname = ""
        info.mtime = layout.FILE_TIME
        if info.isreg():
            info.mode = 0o755 if os.access(path, os.X_OK) else 0o644
            with open(path, "rb") as handle:
                self.tar.addfile(info, handle)
        else:
            self.tar.addfile(info)

    def add_bytes(self, arcname: str, data: bytes, mode: int = 0o644) -> None:
        self._add_folders(arcname)
        info = tarfile.TarInfo(arcname)
        info.size, info.mode, info.mtime = len(data), mode, layout.FILE_TIME
        self.tar.addfile(info, io.BytesIO(data))

    def add_tree(self, prefix: str, root: Path, relatives: list[str]) -> None:
        for relative in relatives:
            self.add_file(f"{prefix}/{relative}", Path(root) / relative)

    def close(self) -> int:
        self.tar.close()
        self.fileobj.flush()
        return self.fileobj.tell()


@dataclass
class SentContext:
    """A context tar written to disk, ready to send to the engine."""

    path: Path
    bytes: int


def write_deps_context(dockerfile: str, install_body: str, wheels: list, dest: Path) -> SentContext:
    """The context route: the Dockerfile, then wheelhouse/ (requirements.txt and the wheels)."""
    with open(dest, "wb") as handle:
        tar = ContextTar(handle)
        tar.add_bytes("Dockerfile", dockerfile.encode("utf-8"))
        tar.add_bytes("wheelhouse/requirements.txt", install_body.encode("utf-8"))
        for wheel in sorted(wheels, key=lambda wheel: wheel.filename):
            tar.add_file(f"wheelhouse/{wheel.filename}", wheel.path)
        return SentContext(dest, tar.close())


def write_dockerfile_context(dockerfile: str, dest: Path) -> SentContext:
    """A context of one Dockerfile (the loopback route, the label step)."""
    with open(dest, "wb") as handle:
        tar = ContextTar(handle)
        tar.add_bytes("Dockerfile", dockerfile.encode("utf-8"))
        return SentContext(dest, tar.close())


def write_project_context(bundle: Bundle, dockerfile: str, files: ProjectFiles, dest: Path, wheel=None) -> SentContext:
    """Dockerfile, then three trees copied to ``/``: bundler's entry point and diagnostics, the code, the config;
    with ``wheel`` (image/projectwheel.py's ProjectWheel), a fourth: the project's own wheel and its hashed line.

    Each tree holds full image paths (``project/opt/bundle/project/...``) with an entry for
    every folder: copied to ``/``, every folder on the way takes its fixed time from the
    context (COPY into an existing folder would stamp that folder with the clock).
    """
    diagnostics = diagnostics_folder(bundle.root)
    own_diagnostics = diagnostics.resolve() == (bundle.root / "diagnostics").resolve()
    code = [r for r in files.included if not r.startswith("config/") and not (own_diagnostics and r.startswith("diagnostics/"))]
    config = [r for r in files.included if r.startswith("config/")]
    with open(dest, "wb") as handle:
        tar = ContextTar(handle)
        tar.add_bytes("Dockerfile", dockerfile.encode("utf-8"))
        tar.add_file(f"bundle{layout.ENTRYPOINT}", resource_path("images") / "entrypoint.sh")
        if own_diagnostics:
            shipped = [r[len("diagnostics/") :] for r in files.included if r.startswith("diagnostics/")]
        else:
            shipped = sorted(
                p.relative_to(diagnostics).as_posix()
                for p in diagnostics.rglob("*")
                if p.is_file() and "__pycache__" not in p.parts and p.suffix not in (".pyc", ".pyo")
            )
        tar.add_tree(f"bundle{layout.DIAGNOSTICS}", diagnostics, shipped)
        tar.add_tree(f"project{layout.PROJECT}", bundle.root, code)
        if wheel is not None:
            tar.add_file(f"wheel{layout.PROJECT_WHEEL}/{wheel.filename}", wheel.path)
            tar.add_bytes(f"wheel{layout.PROJECT_WHEEL}/requirements.txt", wheel.requirements_text().encode("utf-8"))
        tar.add_folder(f"config{layout.PROJECT}/config")
        tar.add_tree(f"config{layout.PROJECT}", bundle.root, config)
        return SentContext(dest, tar.close())
