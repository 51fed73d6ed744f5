"""Files as bundler reads and writes them: parsed documents that name the file when
they are wrong, writes that never leave a half file or a half folder behind."""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

from bundler.errors import FileSystemError, ProjectFileError

MAX_INT = 2**63 - 1  # TOML's integer range
MAX_SHOWN_NAME = 120  # characters of a name kept in a temporary name beside it
TOO_DEEP = "its brackets nest deeper than any document of this kind does"


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not a JSON number")


def parse_json(text: str) -> object:
    """JSON as the standard defines it: NaN and Infinity are refused, not read as floats, and
    nesting deeper than the parser can follow is a ValueError like any other malformed text."""
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except RecursionError:
        raise ValueError(TOO_DEEP) from None


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


def check_table(path: Path, where: str, table: object, allowed: tuple[str, ...], required: tuple[str, ...] = ()) -> dict:
    """``table`` as a dict holding only ``allowed`` keys and every ``required`` one; ProjectFileError naming the key otherwise."""
    if not isinstance(table, dict):
        raise ProjectFileError(
            f"{path}: {where} must be a table, got {type_name(table)}.", hint="See the comments of a fresh project's file.", path=path
        )
    unknown = sorted(set(table) - set(allowed))
    if unknown:
        raise ProjectFileError(
            f"{path}: unknown key {unknown[0]!r} in {where}.", hint=f"Known keys there: {', '.join(allowed)}.", path=path, value=unknown[0]
        )
    missing = [key for key in required if key not in table]
    if missing:
        raise ProjectFileError(f"{path}: {where} lacks {missing[0]}.", hint=f"Add {missing[0]} to {where}.", path=path, value=missing[0])
    return table


def type_name(value: object) -> str:
    """How a parsed value is named in a message: 'the text "5"', 'the number 5', 'a table'."""
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, str):
        return f"the text {value!r}"
    if isinstance(value, (int, float)) or type(value).__name__ == "Decimal":
        return f"the number {value}"
    return {dict: "a table", list: "a list"}.get(type(value), type(value).__name__)


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to a temporary file beside ``path``, then rename it over ``path``.

    A new file gets the permissions the umask allows (0644 under the usual 022), a
    replaced one keeps its own; a failure names ``path``, not the temporary file.
    """
    path = Path(path)
    with naming(path):
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=temporary_prefix(path), suffix=".tmp", dir=path.parent)
    try:
        with naming(path):
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.chmod(tmp, path.stat().st_mode & 0o7777 if path.exists() else 0o666 & ~umask())
            os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: Path, data: object) -> None:
    atomic_write_text(path, json.dumps(data, indent=2, sort_keys=False) + "\n")


def temporary_prefix(path: Path) -> str:
    """The hidden name a temporary file or staging folder beside ``path`` starts with: the name
    cut short, so that a name at the file system's limit (255 bytes) still has room for it."""
    return f".{Path(path).name[:MAX_SHOWN_NAME]}."


@contextlib.contextmanager
def naming(path: Path) -> Iterator[None]:
    """An OSError raised inside names ``path`` (what the user asked for), not a temporary name."""
    try:
        yield
    except OSError as error:
        if error.filename is None or Path(error.filename).name.startswith(temporary_prefix(path)):
            raise OSError(error.errno, error.strerror, str(path)) from None
        raise


@contextlib.contextmanager
def staged_directory(dest: Path) -> Iterator[Path]:
    """Yield an empty staging folder beside ``dest``; it becomes ``dest`` only on success.

    ``dest`` must not exist or be an empty folder. On any exception the staging folder
    and any parent folder made for it are removed, and ``dest`` is left exactly as it was.
    """
    dest = Path(dest)
    made = [parent for parent in reversed(dest.parents) if not parent.exists()]
    try:
        with naming(dest):
            for parent in made:
                parent.mkdir()
            staging = Path(tempfile.mkdtemp(prefix=temporary_prefix(dest), suffix=".partial", dir=dest.parent))
    except OSError as error:
        _remove_made(made)
        if error.errno == errno.ENOENT and dest.parent.is_dir():  # /proc, /sys: the folder exists but takes no new entries
            raise FileSystemError(
                f"cannot create {dest}: {dest.parent} does not accept new folders ({error.strerror}).",
                hint="It is a virtual file system (like /proc or /sys): choose a folder on a disk.",
                path=dest,
            ) from None
        raise
    try:
        os.chmod(staging, 0o777 & ~umask())
        yield staging
        with naming(dest):
            if dest.is_dir():
                dest.rmdir()  # only an empty folder gets here; rmdir refuses anything else
            os.replace(staging, dest)
    except BaseException:
        remove_tree(staging)
        _remove_made(made)
        raise


def remove_tree(folder: Path) -> None:
    """Remove ``folder`` even where a copied read-only folder inside it would stop rmtree."""

    def writable_then_retry(function, path, _):
        with contextlib.suppress(OSError):
            os.chmod(os.path.dirname(path), 0o700)
            function(path)

    shutil.rmtree(folder, **({"onexc": writable_then_retry} if sys.version_info >= (3, 12) else {"onerror": writable_then_retry}))


def _remove_made(folders: list[Path]) -> None:
    for folder in reversed(folders):
        with contextlib.suppress(OSError):
            folder.rmdir()


def umask() -> int:
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
