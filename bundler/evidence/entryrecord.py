"""What `bundler run` records of an entry's run, and how a record is read back and compared.

The run of any entry command (kind ``entry``) lives in ``runs/<id>/``: ``manifest.json``
(the command, the code and its uncommitted changes, the lock, the Target, the image, the
parameter files and inputs with their hashes, times, exit status and signal, every output
with size and SHA-256), ``stdout.log`` and ``stderr.log`` (bounded), ``params/`` (copies of
the parameter files) and ``out/`` (the entry's output folder, ``BUNDLE_RUN_DIR``). The
manifest carries a seal, the SHA-256 of the rest of it: a hash edited by hand is caught. It
is no signature; whoever rewrites the manifest can seal it again, so a run handed on is
pinned by its SHA256SUMS and the seal `bundler run` prints.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

from bundler.fsutil import atomic_write_json, sha256_file

KIND = "entry"
MANIFEST = "manifest.json"
OUT_DIR = "out"
PARAMS_DIR = "params"
LOGS = ("stdout.log", "stderr.log")
LOG_LIMIT = 16 * 1024 * 1024  # bytes kept of each stream; the rest is counted, not stored
CONFIG_SUFFIXES = (".json", ".yaml", ".yml", ".toml", ".ini", ".cfg", ".conf")
SKIPPED_FOLDERS = {".git", "__pycache__", ".venv", "venv", "node_modules", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".tox"}
CODE_SUFFIXES = (".py", ".sh", ".toml", ".cfg", ".ini", ".json", ".yaml", ".yml", ".txt", ".in", ".ipynb")
TREE_LIMIT = 5000  # files hashed for the code state of a folder that is not a git checkout


def listed(value: object) -> list:
    """``value`` when it is a list, else an empty one (a manifest is read as the user left it)."""
    return value if isinstance(value, list) else []


def table(value: object) -> dict:
    """``value`` when it is a JSON object, else an empty one."""
    return value if isinstance(value, dict) else {}


# -- the seal -------------------------------------------------------------------------------
def seal_of(manifest: dict) -> str:
    body = {key: value for key, value in manifest.items() if key != "seal"}
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")).hexdigest()


def write_manifest(run_dir: Path, manifest: dict) -> dict:
    manifest["seal"] = seal_of(manifest)
    atomic_write_json(run_dir / MANIFEST, manifest)
    return manifest


# -- files ----------------------------------------------------------------------------------
def tree_entries(folder: Path, *, hashed: bool = True) -> list[dict]:
    """Every file under ``folder`` with its size and SHA-256 (only its path without ``hashed``);
    a link is recorded as a link (its target's text), never followed."""
    entries: list[dict] = []
    for current, folders, files in os.walk(folder):
        here = Path(current)
        for name in sorted(folders):
            if (here / name).is_symlink():
                files.append(name)
        folders[:] = sorted(name for name in folders if not (here / name).is_symlink())
        for name in sorted(files):
            path = here / name
            relative = path.relative_to(folder).as_posix()
            if path.is_symlink():
                entries.append({"path": relative, "link": os.readlink(path)})
            elif path.is_file():
                entries.append({"path": relative, "bytes": path.stat().st_size} | ({"sha256": sha256_file(path)} if hashed else {}))
    return sorted(entries, key=lambda entry: entry["path"])


def path_entry(root: Path, relative: str) -> dict:
    """A project file or folder (an input): its SHA-256 (a folder's over its files' paths and hashes)."""
    path = root / relative
    if path.is_dir():
        entries = tree_entries(path)
        listing = "".join(f"{e['path']}\0{e.get('sha256') or 'link:' + str(e.get('link'))}\n" for e in entries)
        return {
            "path": relative,
            "files": len(entries),
            "bytes": sum(e.get("bytes", 0) for e in entries),
            "sha256": hashlib.sha256(listing.encode("utf-8", "surrogateescape")).hexdigest(),
        }
    return {"path": relative, "bytes": path.stat().st_size, "sha256": sha256_file(path)}


def inside(root: Path, relative: str) -> bool:
    """A relative path that stays inside ``root``, through no link out of it."""
    pure = PurePosixPath(relative)
    if not relative or pure.is_absolute() or ".." in pure.parts or "\\" in relative or "\0" in relative:
        return False
    return (root / relative).resolve().is_relative_to(root.resolve())


# -- the code -------------------------------------------------------------------------------
def code_state(root: Path, runs_dir: Path) -> dict:
    """The code revision (git HEAD) and the uncommitted changes: `git diff HEAD` and the untracked,
    non-ignored files, hashed, with each changed file's SHA-256 (so a later difference is named).
    Outside a git checkout: the SHA-256 of every code-like file."""
    excluded = _relative_or_none(runs_dir, root)
    head = _git(root, "rev-parse", "--verify", "HEAD")
    if head is None:
        plain = _plain_tree(root, excluded)
        return {"revision": None, "dirty_sha256": _map_sha256(plain), "files": plain}
    revision = head.decode().strip()
    pathspec = ["--", "."] + ([f":(exclude){excluded}"] if excluded else [])
    with _scratch_index(root) as index:  # git diff refreshes the index it reads: it reads a copy, the checkout stays as it is
        diff = _git(root, "diff", "HEAD", "--binary", *pathspec, index=index) or b""
        changed = (_git(root, "diff", "HEAD", "--name-only", "--relative", "-z", *pathspec, index=index) or b"").split(b"\0")
        untracked = (_git(root, "ls-files", "--others", "--exclude-standard", "-z", *pathspec, index=index) or b"").split(b"\0")
    files = {}
    for raw in sorted(set(changed + untracked) - {b""}):
        name = os.fsdecode(raw)
        path = root / name
        files[name] = sha256_file(path) if path.is_file() and not path.is_symlink() else ("link" if path.is_symlink() else "deleted")
    untracked_part = "".join(f"{name}\0{files[name]}\n" for name in sorted(os.fsdecode(u) for u in untracked if u))
    digest = hashlib.sha256(diff + untracked_part.encode("utf-8", "surrogateescape")).hexdigest()
    return {"revision": revision, "dirty_sha256": digest, "files": files}


def code_differences(recorded: object, now: dict, root: Path) -> list[str]:
    """What differs between the recorded code state and ``now``, each naming the files."""
    if not isinstance(recorded, dict):
        return ["the manifest records no code state"]
    problems = []
    before, after = recorded.get("revision"), now.get("revision")
    if before != after:
        names = []
        if isinstance(before, str) and after:
            listing = _git(root, "diff", "--name-only", "--relative", before, after, "--")
            names = listing.decode(errors="replace").split() if listing else []
        problems.append(
            f"code revision {str(before)[:12]} recorded, the project is at {str(after)[:12]} now"
            + (f" (changed since: {_listed(names)})" if names else "")
        )
    recorded_files, files = table(recorded.get("files")), table(now.get("files"))
    changed = sorted(name for name in set(recorded_files) | set(files) if recorded_files.get(name) != files.get(name))
    if changed:
        problems.append(f"files differ from the run's code: {_listed(changed)}")
    elif recorded.get("dirty_sha256") != now.get("dirty_sha256") and before == after:
        problems.append("the uncommitted changes differ from the run's (`git diff HEAD` hashes differently)")
    return problems


def lock_state(root: Path, lock: str) -> dict:
    path = root / lock
    return {"path": lock, "sha256": sha256_file(path) if path.is_file() else None}


def _listed(names: list[str], shown: int = 5) -> str:
    return ", ".join(names[:shown]) + (f" and {len(names) - shown} more" if len(names) > shown else "")


@contextlib.contextmanager
def _scratch_index(root: Path) -> Iterator[Path | None]:
    found = _git(root, "rev-parse", "--path-format=absolute", "--git-path", "index")
    index = Path(found.decode().strip()) if found else None
    if index is None or not index.is_file():
        yield None
        return
    with tempfile.TemporaryDirectory(prefix="bundler-index-") as scratch:
        copy = Path(scratch) / "index"
        shutil.copyfile(index, copy)
        yield copy


def _git(root: Path, *args: str, index: Path | None = None) -> bytes | None:
    env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0"} | ({"GIT_INDEX_FILE": str(index)} if index else {})
    try:
        result = subprocess.run(["git", "--no-optional-locks", "-C", str(root), *args], capture_output=True, timeout=60, env=env)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return result.stdout if result.returncode == 0 else None


def _relative_or_none(path: Path, root: Path) -> str | None:
    try:
        return Path(path).resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return None


def _plain_tree(root: Path, excluded: str | None) -> dict[str, str]:
    files: dict[str, str] = {}
    for current, folders, names in os.walk(root):
        here = Path(current)
        folders[:] = sorted(
            name
            for name in folders
            if name not in SKIPPED_FOLDERS and not name.startswith(".") and (here / name).relative_to(root).as_posix() != excluded
        )
        for name in sorted(names):
            path = here / name
            if name.endswith(CODE_SUFFIXES) and not name.startswith(".") and path.is_file() and not path.is_symlink():
                files[path.relative_to(root).as_posix()] = sha256_file(path)
                if len(files) >= TREE_LIMIT:
                    return files
    return files


def _map_sha256(files: dict[str, str]) -> str:
    return hashlib.sha256("".join(f"{name}\0{digest}\n" for name, digest in sorted(files.items())).encode()).hexdigest()
