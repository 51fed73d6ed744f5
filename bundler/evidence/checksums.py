"""SHA256SUMS: the SHA-256 of every file of a run, in `sha256sum -c`'s format.

`bundler runs export` writes it at the source and checks the copy against it; `runs
verify` compares a run with it when present.
"""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath

from bundler.fsutil import sha256_file

CHECKSUMS = "SHA256SUMS"
SHA256_RE = re.compile(r"[0-9a-fA-F]{64}")


def file_hashes(folder: Path) -> dict[str, str]:
    """SHA-256 of every file under ``folder`` except the checksum list itself, by relative path; a link
    is never followed (links are not listed: `sha256sum -c` would read what they point to)."""
    return {
        path.relative_to(folder).as_posix(): sha256_file(path)
        for path in sorted(folder.rglob("*"))
        if path.is_file() and not _through_link(folder, path) and path.relative_to(folder).as_posix() != CHECKSUMS
    }


def _through_link(folder: Path, path: Path) -> bool:
    return any(part.is_symlink() for part in (path, *path.parents) if part != folder and part.is_relative_to(folder))


def checksum_bytes(hashes: dict[str, str]) -> bytes:
    """The SHA256SUMS text of ``hashes``; a file name that is not UTF-8 keeps its own bytes, as `sha256sum` writes it."""
    return "".join(f"{digest}  {name}\n" for name, digest in hashes.items()).encode("utf-8", "surrogateescape")


def read_checksums(path: Path) -> tuple[dict[str, str], list[str]]:
    """``sha256sum`` format: '<hex>  <path>' (or '<hex> *<path>'), './' prefixes allowed; with what is
    wrong in the list itself (a file listed twice, a line that is no checksum, a path out of the folder)."""
    listed: dict[str, str] = {}
    problems = []
    for number, line in enumerate(path.read_text(encoding="utf-8", errors="surrogateescape").splitlines(), 1):
        if not line.strip():
            continue
        digest, _, name = line.strip().partition(" ")
        name = name.lstrip(" *")
        name = name[2:] if name.startswith("./") else name
        pure = PurePosixPath(name)
        if not SHA256_RE.fullmatch(digest) or not name:
            problems.append(f"{CHECKSUMS}:{number} is not '<sha256>  <file>'")
        elif pure.is_absolute() or ".." in pure.parts:
            problems.append(f"{CHECKSUMS}:{number} names {name!r}, a path out of the run folder")
        elif name in listed:
            problems.append(f"{CHECKSUMS} lists {name} twice")
        else:
            listed[name] = digest.lower()
    return listed, problems


def compare_checksums(folder: Path) -> tuple[list[str], list[str]]:
    """Problems (the list malformed, a listed file missing or different) and files present but not listed."""
    listed, problems = read_checksums(folder / CHECKSUMS)
    actual = file_hashes(folder)
    for name, digest in listed.items():
        if name not in actual:
            problems.append(f"{name} is listed in {CHECKSUMS} but missing")
        elif actual[name] != digest:
            problems.append(f"{name} differs from its SHA-256 in {CHECKSUMS}")
    unlisted = sorted(set(actual) - set(listed))
    return problems, unlisted
