"""Option lines of requirements.in: what each one becomes for a lock made for the Target.

- ``--index-url`` / ``--extra-index-url`` naming PyTorch's index for the Target's own
  build (or PyPI): redundant, dropped with a note — the Target already chooses them;
- PyTorch's index for another build (``cu121`` for a CPU Target): refused, naming the line;
- any other https index given with ``--extra-index-url``: kept as an explicit extra index,
  recorded in the lock's header and used for resolution and downloads (hashes are still
  required for every file); with credentials in the URL, over plain http, or given with
  ``--index-url`` (which would replace PyPI): refused, naming the line;
- ``--find-links``, ``--trusted-host``, ``-c``: refused (host paths, unverified hosts,
  constraints the lock could not record);
- ``--pre``, ``--prefer-binary``, ``--only-binary``, ``--no-binary``: passed to the resolver.
"""

from __future__ import annotations

import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path

from bundler.errors import LockError, ProjectFileError
from bundler.lock.includes import SourceLine

PYTORCH_INDEX = "https://download.pytorch.org/whl"
PASSED_THROUGH = ("--pre", "--prefer-binary", "--only-binary", "--no-binary")
INDEX_OPTIONS = ("-i", "--index-url", "--extra-index-url")
REFUSED = {
    "-f": "a --find-links page or folder is not an index a lock can record (and a folder is a host path)",
    "--find-links": "a --find-links page or folder is not an index a lock can record (and a folder is a host path)",
    "--trusted-host": "a trusted host turns off certificate checks for every download",
    "-c": "constraints files are not followed",
    "--constraint": "constraints files are not followed",
    "--no-index": "the Target's indexes are where locked files come from",
}


@dataclass
class OptionOutcome:
    lines: list[str] = field(default_factory=list)  # for the resolver's input
    extra_indexes: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def split_option(text: str) -> tuple[str, str]:
    head, _, rest = text.partition(" ")
    if "=" in head and head.startswith("--"):
        head, _, value = head.partition("=")
        return head, value.strip()
    if head.startswith("-i") and len(head) > 2:
        return "-i", head[2:]
    return head, rest.strip()


def handle_option(root: Path, line: SourceLine, build, outcome: OptionOutcome) -> None:
    """Apply one option line to ``outcome`` (or raise, naming the line)."""
    option, value = split_option(line.text)
    where = line.where(root)
    if option in PASSED_THROUGH:
        outcome.lines.append(line.text)
        return
    if option in INDEX_OPTIONS:
        _index_line(where, line, option, value, build, outcome)
        return
    reason = REFUSED.get(option, "bundler does not know what this option would change in a lock")
    raise ProjectFileError(
        f"{where}: {option} is not allowed in requirements.in ({line.text}): {reason}.",
        hint="Indexes come from the Target (bundle.toml) plus any `--extra-index-url https://…` line; list plain requirements, "
        "and put your own wheels in the project (`./wheels/NAME-VER-TAG.whl`).",
        path=line.path,
        value=line.text,
    )


def _index_line(where: str, line: SourceLine, option: str, value: str, build, outcome: OptionOutcome) -> None:
    url = value.rstrip("/")
    parts = urllib.parse.urlsplit(url)
    if url == PYTORCH_INDEX or url.startswith(PYTORCH_INDEX + "/"):
        wanted = build.index_url.rstrip("/")
        if url == wanted:
            outcome.notes.append(f"{where}: {line.text} is redundant: the Target's build already takes torch from {wanted}.")
            return
        raise LockError(
            f"{where}: {line.text!r} names PyTorch's index for another build than the Target's ({build.tag}, {wanted}).",
            hint="Remove the line: bundler takes torch and its companions from the Target's own index. To lock for that build, change "
            "the Target (`bundler lock --cuda VER`, `--rocm VER` or `--cpu`).",
            path=line.path,
            value=line.text,
        )
    if url == "https://pypi.org/simple":
        outcome.notes.append(f"{where}: {line.text} is redundant: PyPI is always an index of the lock.")
        return
    problem = None
    if parts.scheme != "https" or not parts.netloc:
        problem = "only https indexes can be recorded (a plain http or file index is unverified or a host path)"
    elif parts.username or parts.password:
        problem = "the URL carries credentials, which would be written into the lock"
    elif option != "--extra-index-url":
        problem = f"{option} would replace PyPI for every package"
    if problem:
        shown = line.text.replace(f"{parts.username or ''}:{parts.password}@", "***@") if parts.password else line.text
        shown = shown.replace(f"{parts.username}@", "***@") if parts.username and not parts.password else shown
        raise LockError(
            f"{where}: {shown!r} is refused: {problem}.",
            hint="Add another index with `--extra-index-url https://HOST/simple` (recorded in the lock; credentials come from pip's "
            "keyring or ~/.netrc, never the URL); a PyPI mirror goes in pip.conf or BUNDLER_INDEX_MAP.",
            path=line.path,
            value=shown,
        )
    if url not in outcome.extra_indexes:
        outcome.extra_indexes.append(url)
        outcome.notes.append(f"{where}: {url} is kept as an extra index, recorded in the lock (every file still needs its hash).")
