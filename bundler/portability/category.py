"""What kind of file a path sits in: code, configuration (a file list included), a notebook, or documentation.

Captured output of a run (a log, a scheduler's capture, a tracker's run folder) is code
outside ``docs/`` and ``logs/``: it stays in the project and names the machine it ran on.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

from bundler.portability import context

CONFIG_SUFFIXES = frozenset({".json", ".yaml", ".yml", ".toml", ".ini", ".cfg", ".conf", ".env", ".properties"})
DOCS_SUFFIXES = frozenset({".md", ".markdown", ".rst", ".txt", ".adoc", ".html", ".htm", ".tex", ".bib", ".bbl"})
DOCS_DIRS = frozenset({"docs", "doc", "logs", "log"})
LIST_SUFFIXES = frozenset({".txt", ".lst", ".list", ".csv", ".tsv", ".flist", ".scp"})
# What a run writes about itself: a log (``run.log``, ``train.log.txt``, ``x.log.1``), a scheduler's
# capture (``slurm-123.out``, ``job.e4567``, ``nohup.out``, ``error_5732569.txt`` named by its job id), and every
# file of a tracker's run folder.
_RUN_OUTPUT_NAME = re.compile(
    r"(?i)\.log(?:\.txt|\.\d+)?$|\.(?:out|err|stdout|stderr)$|\.[eo]\d+$"
    r"|(?:^|[._-])(?:error|errors|err|output|out|stdout|stderr|slurm|job|log)[._-]\d{5,}\.txt$"  # --error=error_%j.txt
)
_RUN_FOLDERS = frozenset({"mlruns", ".hydra", "lightning_logs"})  # MLflow's, Hydra's, Lightning's records
_WANDB_RUN = re.compile(r"(?:offline-)?run-\d{8}_\d{6}-\w+")  # wandb/run-20260213_171349-9hbsldn1/


def run_output(relative: str) -> bool:
    """Is this file a record of a run (a log, a capture, a tracker's run folder), not something a person wrote?"""
    path = PurePosixPath(relative)
    if _RUN_OUTPUT_NAME.search(path.name):
        return True
    folders = path.parts[:-1]
    if any(part in _RUN_FOLDERS for part in folders):
        return True
    return any(part == "wandb" and _WANDB_RUN.fullmatch(after) for part, after in zip(folders, folders[1:], strict=False))


def category_of(relative: str, data: bytes = b"") -> str:
    path = PurePosixPath(relative)
    name, suffix = path.name.lower(), path.suffix.lower()
    if suffix == ".ipynb":
        return "notebook"
    if name == "cmakelists.txt":
        return "code"  # CMake's build script, whatever its suffix says
    if context.EXAMPLE_FILE.search(name):
        return "docs"
    if any(part.lower() in DOCS_DIRS for part in path.parts[:-1]):
        return "docs"  # docs/ and logs/ hold documentation and records, whatever their format
    if run_output(relative):
        return "code"  # a record of a run elsewhere names the machine it ran on, as code does
    if name.startswith("requirements") and suffix in (".txt", ".in"):
        return "config"
    if suffix in CONFIG_SUFFIXES or name.startswith(".env"):
        return "config"
    if suffix == ".txt" and _run_record(data):
        return "code"  # captured output saved as text names the machine it ran on, as a log does
    if suffix in LIST_SUFFIXES and _is_path_list(data):
        return "config"  # a data list: one path a line, read by the code
    if suffix in DOCS_SUFFIXES or name.startswith(("readme", "changelog", "license", "authors", "contributing")):
        return "docs"
    if not suffix and _markdown(data):
        return "docs"  # Markdown saved without its suffix: prose with fenced examples, not a script
    return "code"


_HEADING = re.compile(rb"\s*#{1,6} [^\n]*[A-Za-z]")
_FENCE = re.compile(rb"(?m)^[ \t]*```")


def _markdown(data: bytes) -> bool:
    """Does a file without a suffix read as Markdown: a heading first (no shebang), and a fenced block?"""
    return _HEADING.match(data) is not None and _FENCE.search(data, 0, 1 << 20) is not None


# A line a run writes about itself: a timestamp first, a level first, a progress bar, or numbers as a program
# prints them: a float of many digits (0.4968761593770625, which no person types) or two metrics (loss: 0.12, acc=0.9).
_METRIC = rb"\b[A-Za-z_][\w ]{0,30}?\s*[:=]\s*-?\d+(?:\.\d+)?(?:e-?\d+)?"
_RECORD_LINE = re.compile(
    rb"\s*(?:\[?\d{2,4}[-/.]\d{2}[-/.]\d{2,4}[ T]\d{1,2}:\d{2}|\[?\d{1,2}:\d{2}:\d{2}\b"
    rb"|\[?(?:INFO|WARNING|WARN|ERROR|DEBUG|CRITICAL)\b|[^\n]{0,80}\d+%\||[^\n]*?\d\.\d{6,}"
    rb"|Traceback \(most recent call last\)|File \"[^\"\n]+\", line \d+|[A-Z]\w*(?:Error|Warning|Exception):"  # Python's
    rb"|[^\n]*?" + _METRIC + rb"[^\n]*?" + _METRIC + rb")"
)


# A terminal's prompt with the folder it stands in, as a saved session shows it: ``(base) C:\Users\u>dir``,
# ``PS C:\work>``, ``user@host:~/repo$ ls``, ``user@host ~/repo % ls``, ``user~/repo$ ls`` (a tutorial's bare
# ``$ pip install`` names no folder).
_PROMPT_LINE = re.compile(
    rb"\s*(?:\([\w.-]+\)\s*)?(?:(?:PS )?[A-Za-z]:\\[^>\n]*>"
    rb"|[\w.-]+(?:@[\w.-]+(?::| )|(?=~/))[~/][^\n$#%]*[$#%](?:\s|$))"
)


def _run_record(data: bytes) -> bool:
    """Do most of the first lines read as a run's records (timestamps, levels, progress), not prose, or is it a saved
    terminal session (a prompt naming its folder first, or three of them)?"""
    lines = [line for line in data[:65536].splitlines()[:200] if line.strip()]
    if (lines and _PROMPT_LINE.match(lines[0])) or sum(1 for line in lines if _PROMPT_LINE.match(line)) >= 3:
        return True
    return len(lines) >= 5 and sum(1 for line in lines if _RECORD_LINE.match(line)) >= 0.6 * len(lines)


_PATH_LINE = re.compile(rb"\s*(?:[\"']?(?:/|~/|[A-Za-z]:[\\/]|\.{1,2}/|[\w.-]+/))")


def _is_path_list(data: bytes) -> bool:
    """Do most of the first lines start with a path (a file list, not prose)?"""
    lines = [line for line in data[:65536].splitlines()[:200] if line.strip()]
    return bool(lines) and sum(1 for line in lines if _PATH_LINE.match(line)) >= 0.8 * len(lines)
