"""The build context: the project's files through .dockerignore rules, secrets kept out.

Rules follow Docker's .dockerignore semantics: patterns are relative to the project,
``*`` and ``?`` never cross ``/``, ``**`` crosses any number of folders, a pattern that
matches a folder excludes everything under it, ``!pattern`` re-includes, the last
matching rule wins. Bundler adds defaults before the project's rules (run outputs,
version control, caches, notebook checkpoints, virtual environments) and applies its
secret rules *after* them: a secret-looking file is never sent, even when a ``!`` rule
re-includes it, and every one left out is listed so the user sees what was withheld.

The context is a tar written by bundler itself (docker-py's ``custom_context``), with
fixed ownership and modification times so that the engine's layer cache sees only
content changes.
"""

from __future__ import annotations

import io
import os
import re
import tarfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

DOCKERIGNORE = ".dockerignore"
# Left out of every context, whatever .dockerignore says first (a later `!` may re-include).
DEFAULT_IGNORES = (
    "runs", ".git", ".hg", ".svn", "**/__pycache__", "**/*.py[cod]", "**/.ipynb_checkpoints",
    ".venv", "venv", "**/.mypy_cache", "**/.pytest_cache", "**/.ruff_cache", ".cache", ".tox",
    "**/.DS_Store",
)
# Secret-looking files: never sent (applied after the project's rules), always listed.
SECRET_PATTERNS = (
    "**/.env", "**/.env.*", "**/*.env", "**/.envrc",
    "**/id_rsa*", "**/id_dsa*", "**/id_ecdsa*", "**/id_ed25519*", "**/*.pem", "**/*.key", "**/*.p12", "**/*.pfx",
    "**/.ssh", "**/.netrc", "**/_netrc", "**/.pypirc", "**/.git-credentials", "**/.npmrc",
    "**/.aws", "**/.azure", "**/.config/gcloud", "**/.kube", "**/.docker/config.json",
    "**/credentials", "**/credentials.json", "**/credentials.*", "**/application_default_credentials.json",
    "**/service-account*.json", "**/*-credentials.json", "**/secrets.toml", "**/.secrets",
)
_PRIVATE_KEY_HEAD = re.compile(rb"-----BEGIN (?:[A-Z0-9]+ )?PRIVATE KEY-----")
FIXED_MTIME = 946684800  # 2000-01-01: the layer cache must see content, not touch times


@dataclass(frozen=True)
class Rule:
    pattern: str
    negate: bool
    regex: re.Pattern
    depth: int  # number of path parts the pattern spans (to test a file's parent folders)

    def matches(self, relative: str) -> bool:
        if self.regex.fullmatch(relative):
            return True
        parts = relative.split("/")
        if "**" not in self.pattern and len(parts) > self.depth:
            return bool(self.regex.fullmatch("/".join(parts[: self.depth])))
        # a ** pattern can match any parent folder
        return any(self.regex.fullmatch("/".join(parts[:end])) for end in range(1, len(parts)))


def compile_rule(line: str) -> Rule | None:
    text = line.strip()
    if not text or text.startswith("#"):
        return None
    negate = text.startswith("!")
    if negate:
        text = text[1:].strip()
    cleaned = str(PurePosixPath("/" + text)).lstrip("/") or "."
    return Rule(cleaned, negate, re.compile(_translate(cleaned)), len(cleaned.split("/")))


def _translate(pattern: str) -> str:
    out, index = [], 0
    while index < len(pattern):
        char = pattern[index]
        if pattern.startswith("**/", index):
            out.append("(?:.*/)?")
            index += 3
            continue
        if pattern.startswith("**", index):
            out.append(".*")
            index += 2
            continue
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[":
            end = pattern.find("]", index + 1)
            if end == -1:
                out.append(re.escape(char))
            else:
                body = pattern[index + 1 : end]
                out.append("[" + ("^" + body[1:] if body.startswith("!") else body).replace("\\", "\\\\") + "]")
                index = end
        elif char == "\\" and index + 1 < len(pattern):
            index += 1
            out.append(re.escape(pattern[index]))
        else:
            out.append(re.escape(char))
        index += 1
    return "".join(out)


def is_excluded(rules: list[Rule], relative: str) -> bool:
    """Docker's rule: the last matching pattern wins."""
    excluded = False
    for rule in rules:
        if rule.matches(relative):
            excluded = not rule.negate
    return excluded


@dataclass
class ProjectFiles:
    """What of the project goes into the context, and what was left out."""

    root: Path
    included: list[str] = field(default_factory=list)  # posix paths relative to root, sorted
    secrets: list[str] = field(default_factory=list)   # left out because they look secret
    ignored_count: int = 0
    ignored_bytes: int = 0
    included_bytes: int = 0


def compile_rules(lines: list[str]) -> list[Rule]:
    return [rule for rule in map(compile_rule, lines) if rule is not None]


def project_rules(root: Path) -> list[Rule]:
    lines = list(DEFAULT_IGNORES)
    ignore_file = Path(root) / DOCKERIGNORE
    if ignore_file.is_file():
        lines += ignore_file.read_text(encoding="utf-8", errors="replace").splitlines()
    return compile_rules(lines)


SECRET_RULES = [compile_rule(pattern) for pattern in SECRET_PATTERNS]


def looks_secret(relative: str, path: Path | None = None) -> bool:
    if any(rule.matches(relative) for rule in SECRET_RULES):
        return True
    if path is not None and path.is_file() and path.stat().st_size < 64 * 1024:
        with open(path, "rb") as handle:
            return bool(_PRIVATE_KEY_HEAD.search(handle.read(4096)))
    return False


def collect(root: Path) -> ProjectFiles:
    """Walk the project once: every file is included, ignored, or withheld as a secret."""
    root = Path(root)
    rules = project_rules(root)
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
            elif is_excluded(rules, relative):
                result.ignored_count += 1
                result.ignored_bytes += size
            else:
                result.included.append(relative)
                result.included_bytes += size
    result.included.sort()
    result.secrets.sort()
    return result


class ContextTar:
    """A build context tar with fixed owners and times, written into a file or memory."""

    def __init__(self, fileobj) -> None:
        self.fileobj = fileobj
        self.tar = tarfile.open(fileobj=fileobj, mode="w", format=tarfile.PAX_FORMAT)

    def add_file(self, arcname: str, path: Path) -> None:
        info = self.tar.gettarinfo(str(path), arcname=arcname)
        info.uid = info.gid = 0
        info.uname = info.gname = ""
        info.mtime = FIXED_MTIME
        if info.isreg():
            info.mode = 0o755 if os.access(path, os.X_OK) else 0o644
            with open(path, "rb") as handle:
                self.tar.addfile(info, handle)
        else:
            self.tar.addfile(info)

    def add_bytes(self, arcname: str, data: bytes, mode: int = 0o644) -> None:
        info = tarfile.TarInfo(arcname)
        info.size, info.mode, info.mtime = len(data), mode, FIXED_MTIME
        self.tar.addfile(info, io.BytesIO(data))

    def add_tree(self, prefix: str, root: Path, relatives: list[str]) -> None:
        for relative in relatives:
            self.add_file(f"{prefix}/{relative}", Path(root) / relative)

    def close(self) -> int:
        self.tar.close()
        self.fileobj.flush()
        return self.fileobj.tell()
