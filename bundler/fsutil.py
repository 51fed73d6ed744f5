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
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

from bundler.errors import FileSystemError, ProjectFileError, from_os_error

MAX_INT = 2**63 - 1  # TOML's integer range
BACKUP_DIR = ".bundler/backups"
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
    names: dict[type, str] = {dict: "a table", list: "a list"}
    return names.get(type(value), type(value).__name__)


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to a temporary file beside ``path``, then rename it over ``path``.

    A new file gets the permissions the umask allows (0644 under the usual 022), a
    replaced one keeps its own; a failure names ``path``, not the temporary file.
    """
    path = Path(path)
    if path.exists() and not path.is_file() and not path.is_dir():
        with naming(path), open(path, "wb") as stream:  # a device or a pipe (-o /dev/stdout) is written to, never replaced
            stream.write(data)
        return
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


def replace_with_backups(root: Path, writes: Sequence[tuple[str, bytes | None]], doing: str) -> tuple[str, list[str]]:
    """Write every file of ``writes`` into ``root`` (``None`` removes it), all or nothing.

    Every new file is first staged under ``.bundler/backups/``, so that nothing is touched
    until all of them could be written; then every file that exists is copied byte for byte
    under ``.bundler/backups/<stamp>/``, a journal of what is about to change is written
    beside it, and the staged files are moved in. On any failure or interrupt, every file is
    put back and the backups and staging removed: the project is left as it was. A process
    killed while moving in leaves its journal, and ``put_back_unfinished`` undoes it.
    Returns the backup folder (relative to ``root``) and the paths changed.
    """
    root = Path(root)
    _refuse_linked_backups(root, doing)
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    backups, number = root / BACKUP_DIR / stamp, 1
    while any(path.exists() for path in _companions(backups)):
        number += 1
        backups = root / BACKUP_DIR / f"{stamp}-{number}"
    backups, staging, journal = _companions(backups)
    made = [p for p in (root / ".bundler", root / BACKUP_DIR) if not p.exists()]
    moved: list[tuple[str, bool]] = []  # (path, existed), each noted before it is touched
    folders: list[str] = []  # the folders moving in creates
    try:
        for relative, data in writes:
            if data is not None:
                atomic_write_bytes(staging / relative, data)
        existed = {relative: (root / relative).exists() for relative, _ in writes}
        folders = sorted({folder for relative, data in writes if data is not None for folder in _missing_parents(root, relative)})
        for relative in (relative for relative, _ in writes if existed[relative]):
            (backups / relative).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(root / relative, backups / relative)
        atomic_write_json(journal, {"writes": [[relative, existed[relative]] for relative, _ in writes], "folders": folders})
        for relative, data in writes:
            moved.append((relative, existed[relative]))
            _move_in(root / relative, None if data is None else staging / relative)
            _pause_for_tests(len(moved))
        journal.unlink()
    except BaseException as error:
        _put_back(root, moved, backups, [root / folder for folder in folders] + made)
        if isinstance(error, OSError):
            raise from_os_error(error, f"{doing} put every file back") from None
        raise
    remove_tree(staging)
    return str(backups.relative_to(root)), [relative for relative, _ in writes]


def put_back_unfinished(root: Path, *, apply: bool = True) -> list[str]:
    """The backup folders of writes a killed process left half done (``replace_with_backups``), each undone unless not ``apply``."""
    root = Path(root)
    undone: list[str] = []
    if any(folder.is_symlink() for folder in (root / ".bundler", root / BACKUP_DIR)):
        return undone  # journals reached through a link are not this project's to replay
    for journal in sorted((root / BACKUP_DIR).glob("*.journal.json")):
        backups = journal.with_name(journal.name[: -len(".journal.json")])
        undone.append(str(backups.relative_to(root)))
        if not apply:
            continue
        document = read_json(journal, hint=f"Put the files back from {backups} by hand, then remove {journal}.")
        document = document if isinstance(document, dict) else {}
        entries = [entry for entry in document.get("writes", []) if isinstance(entry, list) and len(entry) == 2]
        moved = [(str(relative), bool(existed)) for relative, existed in entries if _inside(str(relative))]
        folders = [root / str(folder) for folder in document.get("folders", []) if _inside(str(folder))]
        _put_back(root, moved, backups, folders)
    return undone


PAUSE_VARIABLE = "BUNDLER_TEST_PAUSE_AFTER_WRITES"


def _pause_for_tests(written: int) -> None:
    """Where the interruption tests stop a transaction: after ``$BUNDLER_TEST_PAUSE_AFTER_WRITES`` files, say so and wait."""
    if os.environ.get(PAUSE_VARIABLE) == str(written):
        print(f"bundler: paused after {written} file(s) ({PAUSE_VARIABLE})", file=sys.stderr, flush=True)
        time.sleep(600)


def _refuse_linked_backups(root: Path, doing: str) -> None:
    """Backups are written only inside the project: never through a link named .bundler or .bundler/backups."""
    for folder in (root / ".bundler", root / BACKUP_DIR):
        if folder.is_symlink():
            raise FileSystemError(
                f"{doing}: {folder} is a symbolic link (to {os.readlink(folder)}); the backups would be written through it.",
                hint=f"Replace the link {folder.name} by a folder inside the project, then run the command again.",
                path=folder,
            )


def _companions(backups: Path) -> tuple[Path, Path, Path]:
    """The backup folder, its staging folder and its journal."""
    return backups, backups.with_name(backups.name + ".staging"), backups.with_name(backups.name + ".journal.json")


def _missing_parents(root: Path, relative: str) -> list[str]:
    parts = Path(relative).parts
    folders = [Path(*parts[:end]) for end in range(1, len(parts))]
    return [folder.as_posix() for folder in folders if not (root / folder).exists()]


def _inside(relative: str) -> bool:
    path = Path(relative)
    return bool(relative) and not path.is_absolute() and ".." not in path.parts


def _move_in(target: Path, staged: Path | None) -> None:
    if staged is None:
        target.unlink(missing_ok=True)
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.exists():
        os.chmod(staged, target.stat().st_mode & 0o7777)  # a replaced file keeps its permissions
    os.replace(staged, target)


def _put_back(root: Path, moved: list[tuple[str, bool]], backups: Path, made: list[Path]) -> None:
    for relative, existed in reversed(moved):
        if (root / relative).is_symlink():
            (root / relative).unlink()  # a link put in its place since: never copy through it
        if existed:
            shutil.copy2(backups / relative, root / relative)
        else:
            (root / relative).unlink(missing_ok=True)
    for folder in _companions(backups):
        if folder.is_dir():
            remove_tree(folder)
        elif folder.exists():
            folder.unlink()
    for folder in sorted(made, key=lambda path: len(path.parts), reverse=True):
        with contextlib.suppress(OSError):
            folder.rmdir()


def remove_tree(folder: Path) -> None:
    """Remove ``folder`` even where a copied read-only folder inside it would stop rmtree."""

    def writable_then_retry(function, path, _):
        with contextlib.suppress(OSError):
            os.chmod(os.path.dirname(path), 0o700)
            function(path)

    if sys.version_info >= (3, 12):
        shutil.rmtree(folder, onexc=writable_then_retry)  # novm: only reached on 3.12+
    else:
        shutil.rmtree(folder, onerror=writable_then_retry)


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
