"""The pristine render of a project, stored at `bundler new` (and each `bundler update`) time.

`bundler update` merges three ways and needs the files exactly as the template rendered them
for this project. They are kept in one deterministic archive, ``.bundler/template-base.tar.gz``
(sorted names, no owners, one file time), its sha256 recorded in ``.bundler-answers.json``.
One file inside ``.bundler/`` is never read as the user's code: `bundler paths` skips the
folder, the build context leaves it out, and no test runner or linter walks into an archive.
Nothing a template version needs is fetched from elsewhere, so the old render can always be
reproduced (no "repository lacks the necessary blob").
"""

from __future__ import annotations

import gzip
import io
import os
import tarfile
from pathlib import Path, PurePosixPath

from bundler.errors import ProjectFileError, UsageError
from bundler.fsutil import atomic_write_bytes, sha256_bytes

BASE_FILE = ".bundler/template-base.tar.gz"
HINT = "Restore .bundler/template-base.tar.gz and .bundler-answers.json from version control, as the last new or update left them."


def read_tree(folder: Path) -> dict[str, bytes]:
    """Every regular file under ``folder`` by its POSIX path; a symbolic link in a render is refused."""
    folder = Path(folder)
    files: dict[str, bytes] = {}
    for current, dirs, names in os.walk(folder):
        dirs.sort()
        for name in sorted(names) + [d for d in dirs if os.path.islink(os.path.join(current, d))]:
            path = Path(current) / name
            relative = path.relative_to(folder).as_posix()
            if path.is_symlink() or not path.is_file():
                raise UsageError(
                    f"the template renders {relative} as a symbolic link or special file; bundler only writes regular files.",
                    hint="Replace it in the template by a regular file.",
                    path=path,
                )
            files[relative] = path.read_bytes()
    return files


def pack(files: dict[str, bytes]) -> bytes:
    """The files as a gzip'd tar that depends on their names and bytes alone."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name in sorted(files):
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(files[name]), 0o644, 0
            tar.addfile(info, io.BytesIO(files[name]))
    packed = io.BytesIO()
    with gzip.GzipFile(fileobj=packed, mode="wb", mtime=0, filename="") as handle:
        handle.write(raw.getvalue())
    return packed.getvalue()


def store(project: Path, files: dict[str, bytes]) -> dict:
    """Write the archive into ``project``; the record .bundler-answers.json keeps."""
    data = pack(files)
    atomic_write_bytes(Path(project) / BASE_FILE, data)
    return record(data)


def record(data: bytes) -> dict:
    return {"file": BASE_FILE, "sha256": sha256_bytes(data)}


def load(project: Path, recorded: dict) -> dict[str, bytes]:
    """The stored render, checked against the sha256 the answers file recorded; ProjectFileError naming the archive otherwise."""
    path = Path(project) / BASE_FILE
    data = path.read_bytes()
    if recorded.get("sha256") != sha256_bytes(data):
        raise ProjectFileError(
            f"{path} does not match the sha256 .bundler-answers.json recorded for it: the stored render was changed or damaged.",
            hint=HINT,
            path=path,
        )
    return unpack(path, data)


def unpack(path: Path, data: bytes) -> dict[str, bytes]:
    """Regular files with plain relative names only: the archive is read, never extracted."""
    files: dict[str, bytes] = {}
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
            for member in tar:
                name = PurePosixPath(member.name)
                if not member.isfile() or name.is_absolute() or ".." in name.parts or str(name) != member.name:
                    raise ProjectFileError(f"{path} holds {member.name!r}, which no render writes.", hint=HINT, path=path)
                handle = tar.extractfile(member)
                files[member.name] = handle.read() if handle else b""
    except (tarfile.TarError, OSError, EOFError) as error:
        raise ProjectFileError(f"{path} is not a readable archive: {error}.", hint=HINT, path=path) from None
    return files
