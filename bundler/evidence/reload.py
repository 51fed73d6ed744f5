"""The checkpoint reload of `bundler runs verify`: the run's own reload.py in a fresh process.

The run carries its model and its reload script (the generated project copies them in),
so the reload needs neither the project nor bundler: only an interpreter with torch
(bundler's own, or ``--python PATH``). Every accepted document must be re-predicted as
predictions.jsonl stores it; reload.py compares, and the IDs it re-predicted are checked
here against the accepted ones, so an older or edited reload.py cannot skip documents.
"""

from __future__ import annotations

import importlib.util
import shlex
import subprocess
import sys
from pathlib import Path

from bundler.fsutil import parse_json

LISTED = 5


def reload_in_fresh_process(run_dir: Path, accepted: list[str], python: str | None = None) -> tuple[bool, str]:
    """(ok, what was found): the checkpoint reloads and re-predicts every one of ``accepted`` as stored."""
    script = run_dir / "reload.py"
    if not script.is_file():
        return False, "reload.py is missing: the run does not say how to reload its checkpoint"
    if not (run_dir / "checkpoint.pt").is_file():
        return False, "checkpoint.pt is missing"
    interpreter = python or sys.executable
    if python is None and importlib.util.find_spec("torch") is None:
        command = shlex.join(["python", f"{run_dir.name}/reload.py", run_dir.name])
        return False, (
            f"torch is not installed in bundler's interpreter ({sys.executable}): the checkpoint cannot be reloaded here. "
            f"Hint: install torch next to bundler, pass --python PATH of an interpreter that has it, "
            f"or run `{command}` where torch is installed."
        )
    try:
        result = subprocess.run([interpreter, "-B", str(script), str(run_dir), "--json"], capture_output=True, text=True, timeout=900)
    except (OSError, subprocess.TimeoutExpired) as error:
        return False, f"the reload process could not run with {interpreter}: {error}"
    try:
        report = parse_json(result.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        tail = (result.stderr.strip().splitlines() or ["no output"])[-1]
        return False, f"the reload process failed (exit {result.returncode}): {tail}"
    if not isinstance(report, dict) or not report.get("ok"):
        problems = report.get("problems") if isinstance(report, dict) else None
        return False, "; ".join(map(str, problems or ["reload failed"]))
    predicted = {str(entry.get("id")) for entry in report.get("predicted") or [] if isinstance(entry, dict)}
    missed = [i for i in accepted if i not in predicted]
    if missed:
        shown = ", ".join(missed[:LISTED]) + (f" and {len(missed) - LISTED} more" if len(missed) > LISTED else "")
        return False, f"reloaded, but re-predicted {len(predicted)} of {len(set(accepted))} accepted documents: {shown} not re-predicted"
    return True, f"reloaded in a fresh process; re-predicted all {len(predicted)} accepted documents as stored"
