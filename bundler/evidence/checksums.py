"""SHA256SUMS: the SHA-256 of every file of a run, in `sha256sum -c`'s format.

`bundler runs export` writes it at the source and checks the copy against it; `runs
verify` compares a run with it when present.
"""

from __future__ import annotations

from pathlib import Path

from bundler.contracts.secrets import is_secret_path
from bundler.fsutil import sha256_file

CHECKSUMS = "SHA256SUMS"


def file_hashes(folder: Path) -> dict[str, str]:
    """SHA-256 of every file under ``folder`` by relative path, except the checksum list itself and
    secrets (contracts/secrets.py), which evidence never carries: an export leaves them behind."""
    return {
        path.relative_to(folder).as_posix(): sha256_file(path)
        for path in sorted(folder.rglob("*"))
        if path.is_file() and path.relative_to(folder).as_posix() != CHECKSUMS and not is_secret_path(path.relative_to(folder).as_posix())
    }


def secret_files(folder: Path) -> list[str]:
    """The files under ``folder`` that are secrets by their path (never exported)."""
    return [
        path.relative_to(folder).as_posix()
        for path in sorted(folder.rglob("*"))
        if (path.is_file() or path.is_symlink()) and is_secret_path(path.relative_to(folder).as_posix())
    ]


def read_checksums(path: Path) -> dict[str, str]:
    """``sha256sum`` format: '<hex>  <path>' (or '<hex> *<path>'), './' prefixes allowed."""
    listed = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        digest, _, name = line.strip().partition(" ")
        name = name.lstrip(" *")
        if digest and name:
            listed[name[2:] if name.startswith("./") else name] = digest.lower()
    return listed


def compare_checksums(folder: Path) -> tuple[list[str], list[str]]:
    """Problems (a listed file missing or different) and files present but not listed."""
    listed = read_checksums(folder / CHECKSUMS)
    actual = file_hashes(folder)
    problems = []
    for name, digest in listed.items():
        if name not in actual:
            problems.append(f"{name} is listed in {CHECKSUMS} but missing")
        elif actual[name] != digest:
            problems.append(f"{name} differs from its SHA-256 in {CHECKSUMS}")
    unlisted = sorted(set(actual) - set(listed))
    return problems, unlisted
