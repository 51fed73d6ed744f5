"""Files as bundler reads and writes them: parsed documents that name the file when
they are wrong, writes that never leave a half file or a half folder behind."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from bundler.errors import ProjectFileError


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not a JSON number")


def parse_json(text: str) -> object:
    """JSON as the standard defines it: NaN and Infinity are refused, not read as floats."""
    return json.loads(text, parse_constant=_reject_constant)


def read_json(path: Path, *, hint: str) -> object:
    """The parsed document; ProjectFileError naming the file when it is missing, not UTF-8 or not JSON."""
    path = Path(path)
    if not path.is_file():
        raise ProjectFileError(f"{path} not found.", hint=hint, path=path)
    try:
        return parse_json(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as error:
        raise ProjectFileError(f"{path} is not UTF-8 text ({error.reason} at byte {error.start}).", hint=hint, path=path) from None
    except ValueError as error:
        raise ProjectFileError(f"{path} is not valid JSON: {error}.", hint=hint, path=path) from None


def read_toml(path: Path, *, hint: str, parse_float=float) -> dict:
    """The parsed document; ProjectFileError naming the file when it is missing, not UTF-8 or not TOML."""
    from bundler import tomlcompat

    path = Path(path)
    if not path.is_file():
        raise ProjectFileError(f"{path} not found.", hint=hint, path=path)
    try:
        return tomlcompat.loads(path.read_text(encoding="utf-8"), parse_float=parse_float)
    except UnicodeDecodeError as error:
        raise ProjectFileError(f"{path} is not UTF-8 text ({error.reason} at byte {error.start}).", hint=hint, path=path) from None
    except tomlcompat.TOMLDecodeError as error:
        raise ProjectFileError(f"{path} is not valid TOML: {error}.", hint=hint, path=path) from None


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to a temporary file beside ``path``, then rename it over ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if path.exists():
            os.chmod(tmp, path.stat().st_mode & 0o7777)
        else:
            os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: Path, data: object) -> None:
    atomic_write_text(path, json.dumps(data, indent=2, sort_keys=False) + "\n")


@contextlib.contextmanager
def staged_directory(dest: Path) -> Iterator[Path]:
    """Yield an empty staging folder beside ``dest``; it becomes ``dest`` only on success.

    ``dest`` must not exist or be an empty folder. On any exception the staging folder
    is removed and ``dest`` is left exactly as it was.
    """
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", suffix=".partial", dir=dest.parent))
    try:
        os.chmod(staging, 0o777 & ~_umask())
        yield staging
        if dest.is_dir():
            dest.rmdir()  # only an empty folder gets here; rmdir refuses anything else
        os.replace(staging, dest)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path, chunk_size: int = 1 << 20) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(chunk_size), b""):
            digest.update(chunk)
    return digest.hexdigest()
