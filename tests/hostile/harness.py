"""What every hostile-input case asserts: the documented exit code, one paragraph with a
hint, no traceback, a single JSON document with --json, and nothing changed or left behind.

A case runs the real `bundler` (or `python diagnostics/run.py`, or a generated project's
pilot) in a subprocess against a folder the case prepared; ``watched`` folders are
snapshotted before and compared after, so a failed command that wrote, removed or left
a file is caught. ``unprivileged=True`` runs it without root's power to ignore file
permissions (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH), so that a read-only folder or an
unreadable file means for it what it means for any user, even when the suite runs as root.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Outcome:
    code: int
    stdout: str
    stderr: str
    changed: list[str] = field(default_factory=list)


def snapshot(*folders: Path) -> dict[str, str]:
    """Every entry under ``folders`` (files by content, folders and links by name)."""
    seen = {}
    for folder in folders:
        if not folder.exists():
            continue
        for path in sorted(folder.rglob("*")):
            key = str(path)
            if path.is_symlink():
                seen[key] = "link:" + os.readlink(path)
            elif path.is_file():
                try:
                    seen[key] = hashlib.sha256(path.read_bytes()).hexdigest()
                except OSError:
                    seen[key] = "unreadable"
            else:
                seen[key] = "folder"
    return seen


def differences(before: dict[str, str], after: dict[str, str]) -> list[str]:
    return sorted(name for name in set(before) | set(after) if before.get(name) != after.get(name))


def run(
    argv: list[str],
    *,
    cwd: Path,
    env: dict | None = None,
    watched: tuple[Path, ...] = (),
    timeout: int = 300,
    unprivileged: bool = False,
) -> Outcome:
    """``argv`` after `bundler` (or a full command when it starts with the interpreter)."""
    command = argv if argv and argv[0] == sys.executable else [sys.executable, "-m", "bundler", *argv]
    before = snapshot(*watched)
    completed = subprocess.run(
        command,
        cwd=cwd,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
        preexec_fn=_drop_file_powers if unprivileged and os.geteuid() == 0 else None,
    )
    return Outcome(completed.returncode, completed.stdout, completed.stderr, differences(before, snapshot(*watched)))


def _drop_file_powers() -> None:
    """In the child, before exec: root without the capabilities that bypass file permissions."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    for capability in (1, 2):  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH
        if libc.prctl(24, capability, 0, 0, 0) != 0:  # PR_CAPBSET_DROP: gone from the bounding set, so from the exec'd program
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


def assert_refused(outcome: Outcome, code: int, *mentions: str, json_mode: bool = False) -> None:
    """A clean refusal: the exit code, one paragraph naming ``mentions`` with a hint, nothing changed."""
    text = outcome.stdout + outcome.stderr
    assert outcome.code == code, f"exit {outcome.code}, expected {code}:\n{text[-2000:]}"
    assert "Traceback" not in text, text[-3000:]
    paragraphs = [line for line in outcome.stderr.splitlines() if line.startswith("Error: ")]
    assert len(paragraphs) == 1, f"expected one error paragraph:\n{outcome.stderr[-2000:]}"
    assert " Hint: " in paragraphs[0], paragraphs[0]
    for mention in mentions:
        assert mention in paragraphs[0], f"{mention!r} not named in: {paragraphs[0]}"
    assert outcome.changed == [], f"the command changed or left behind: {outcome.changed[:10]}"
    if json_mode:
        document = json.loads(outcome.stdout)  # exactly one JSON document, or this raises
        assert document["ok"] is False and document["error"]["exit_code"] == code, document
