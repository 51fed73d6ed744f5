"""The human table (streamed as stages finish) and the report files (written atomically)."""

from __future__ import annotations

import json
import os
import sys
import tempfile

from bdiag.result import FAIL, PASS, SKIP, WARN

_WIDTH = {"number": 3, "name": 12, "status": 6, "seconds": 8}


def exit_code(results) -> int:
    """0 when no stage failed; else 10 + the number of the first failing stage."""
    for result in results:
        if result.status == FAIL:
            return 10 + result.number
    return 0


def header(backend_line: str, stream=None) -> None:
    stream = stream or sys.stdout
    stream.write(f"bundle diagnostics — {backend_line}\n")
    stream.write(f"{'#':>3}  {'stage':<12} {'status':<6} {'seconds':>8}  key figure / reason\n")
    stream.flush()


def row(result, stream=None) -> None:
    stream = stream or sys.stdout
    status = result.status.upper() if result.status in (FAIL, WARN) else result.status
    figure = result.summary if result.status == PASS else (result.reason or result.summary)
    if result.status in (FAIL, WARN) and result.summary and result.summary not in figure:
        figure = f"{figure} [{result.summary}]"
    stream.write(f"{result.number:>3}  {result.name:<12} {status:<6} {result.seconds:>8.2f}  {figure}\n")
    if result.hint and result.status in (FAIL, WARN):
        stream.write(f"{'':>33}hint: {result.hint}\n")
    stream.flush()


def footer(results, code: int, stream=None) -> None:
    stream = stream or sys.stdout
    warnings = sum(result.status == WARN for result in results)
    skipped = sum(result.status == SKIP for result in results)
    if code == 0:
        stream.write(f"verdict: no stage failed ({warnings} warn, {skipped} skip) — exit 0\n")
    else:
        first = next(result for result in results if result.status == FAIL)
        stream.write(f"verdict: first failing stage is {first.number} {first.name} — exit {code}\n")
    stream.flush()


def write_json(path: str, report: dict) -> None:
    write_text(path, json.dumps(report, indent=2, default=str) + "\n", ".json")


def write_text(path: str, text: str, suffix: str) -> None:
    """Temporary file in the same folder, then os.replace: readers never see half a report.

    A device or a pipe (``--json /dev/stdout``) is written to as it is, never replaced by a file.
    """
    if os.path.exists(path) and not os.path.isfile(path) and not os.path.isdir(path):
        with open(path, "w", encoding="utf-8") as stream:
            stream.write(text)
        return
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".diagnostics-", suffix=f"{suffix}.tmp", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
