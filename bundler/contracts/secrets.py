"""What a secret looks like: one list for the build context, `runs export` and `bundler check`.

A path is a secret when one of its parts (or consecutive parts, for ``.huggingface/token``)
matches a pattern below: a secret folder covers everything inside it. ``.env`` files are
secrets, except the documented examples (``.env.example``, ``.env.sample``,
``.env.template``) that a project commits on purpose. A file is a secret by its content
when its first bytes hold a private key. A text is secret-looking when it holds a token
of a known shape (``TOKEN_PATTERNS``).

Standard library only.
"""

from __future__ import annotations

import re
from fnmatch import translate
from pathlib import Path

# Each pattern is matched against one path part, or "a/b" against two consecutive parts.
SECRET_PATTERNS = (
    # environment files
    ".env",
    ".env.*",
    "*.env",
    ".envrc",
    # SSH, TLS and GPG keys
    ".ssh",
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "*.jks",
    "*.keystore",
    ".gnupg",
    "*.gpg",
    "secring.*",
    "private-keys-v1.d",
    # credentials of tools and package indexes
    ".netrc",
    "_netrc",
    ".pypirc",
    ".npmrc",
    ".git-credentials",
    ".docker/config.json",
    # cloud and hub tokens
    ".aws",
    ".azure",
    ".config/gcloud",
    ".kube",
    ".boto",
    ".s3cfg",
    ".databrickscfg",
    "kaggle.json",
    ".kaggle",
    ".huggingface",
    "huggingface/token",
    "huggingface/stored_tokens",
    "credentials",
    "credentials.*",
    "*-credentials.json",
    "application_default_credentials.json",
    "service-account*.json",
    "secrets.toml",
    ".secrets",
)
NOT_SECRET = frozenset({".env.example", ".env.sample", ".env.template"})
PRIVATE_KEY_HEAD = re.compile(rb"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----")
HEAD_BYTES = 4096

# Token-looking values that must never sit in a parameter file.
TOKEN_PATTERNS = (
    ("OpenAI-style API key", re.compile(r"\bsk-(?:proj-|ant-)?[A-Za-z0-9_-]{20,}")),
    ("Hugging Face token", re.compile(r"\bhf_[A-Za-z0-9]{30,}")),
    ("GitHub token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})")),
    ("AWS access key id", re.compile(r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b")),
    ("AWS secret access key", re.compile(r"(?i)aws.{0,20}secret.{0,20}[\"':= ]+[A-Za-z0-9/+=]{40}\b")),
    ("private key block", re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY")),
    ("password in a URL", re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^/\s:@\"']+:[^/\s@\"']+@")),
    ("Slack token", re.compile(r"\bxox[abpors]-[A-Za-z0-9-]{10,}")),
)

# Paths every reader must call secret: the samples `bundler check` tries a project's
# .dockerignore with, and the agreement table of the tests.
SECRET_SAMPLES = (
    ".env",
    ".env.local",
    "config/.env",
    "prod.env",
    "server.pem",
    "keys/server.pem",
    "id_rsa",
    "id_rsa.pub",
    ".ssh/config",
    ".gnupg/pubring.kbx",
    ".netrc",
    ".pypirc",
    ".git-credentials",
    ".docker/config.json",
    ".aws/credentials",
    ".config/gcloud/application_default_credentials.json",
    "kaggle.json",
    ".kaggle/kaggle.json",
    ".huggingface/token",
    ".cache/huggingface/token",
    "credentials",
    "credentials.json",
)


# compiled once: every file of a context is asked about (fnmatchcase per pattern and part cost a rebuild ~0.04 s)
_ONE_PART = re.compile("|".join(translate(pattern) for pattern in SECRET_PATTERNS if "/" not in pattern))
_PARTS = tuple(tuple(re.compile(translate(glob)) for glob in pattern.split("/")) for pattern in SECRET_PATTERNS if "/" in pattern)


def _prefix_matches(parts: list[str]) -> bool:
    """Whether the last part of ``parts``, or its last few parts, match a pattern."""
    if _ONE_PART.match(parts[-1]):
        return True
    return any(
        len(parts) >= len(globs) and all(glob.match(part) for part, glob in zip(parts[-len(globs) :], globs, strict=True))
        for globs in _PARTS
    )


def is_secret_path(relative: str) -> bool:
    """Whether a project-relative path (``/``-separated) is a secret or lies inside one."""
    parts = [part for part in relative.replace("\\", "/").split("/") if part not in ("", ".")]
    for end in range(1, len(parts) + 1):
        prefix = parts[:end]
        if prefix[-1] in NOT_SECRET:
            continue
        if _prefix_matches(prefix):
            return True
    return False


def is_secret_content(head: bytes) -> bool:
    """Whether a file's first bytes (``HEAD_BYTES`` of them) hold a private key."""
    return PRIVATE_KEY_HEAD.search(head[:HEAD_BYTES]) is not None


def find_tokens(text: str) -> list[str]:
    """The kinds of token ``text`` holds ([] when none)."""
    return [label for label, pattern in TOKEN_PATTERNS if pattern.search(text)]


def looks_secret(relative: str, path: Path | None = None) -> bool:
    """A secret by its name or a folder's name above it, or by a private key in its first bytes:
    the one rule of the build context, `runs export`, `bundler run` and `bundler check`."""
    if is_secret_path(relative):
        return True
    if path is not None and path.is_file() and not path.is_symlink() and path.stat().st_size < 64 * 1024:
        with open(path, "rb") as handle:
            return is_secret_content(handle.read(HEAD_BYTES))
    return False
