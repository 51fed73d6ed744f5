"""Figures for `bundler update`: the stored render's size, an update with a merge, an update with nothing to do.

python bench/bench_update.py
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import row, run, timed

ROOT = Path(__file__).resolve().parents[1]


def newer_template(work: Path) -> Path:
    """The installed template with its version raised and a line changed in a file the user edits too."""
    template = work / "template-3"
    shutil.copytree(ROOT / "template", template)
    context = json.loads((template / "cookiecutter.json").read_text())
    (template / "cookiecutter.json").write_text(json.dumps({**context, "_template_version": "3"}))
    config = template / "{{cookiecutter.project_slug}}" / "config" / "pilot.json"
    config.write_text(config.read_text().replace('"min_chars": 40', '"min_chars": 20'))
    return template


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="bench-update-"))
    try:
        template = newer_template(work)
        run([sys.executable, "-m", "bundler", "new", str(work / "made"), "--no-input"])
        config = work / "made" / "config" / "pilot.json"
        config.write_text(config.read_text().replace('"steps": 1,', '"steps": 3,'))
        archive = (work / "made" / ".bundler" / "template-base.tar.gz").stat().st_size
        files = sum(1 for p in (work / "made").rglob("*") if p.is_file())
        copies = iter(range(1000))

        def fresh_update() -> None:
            project = work / f"u{next(copies)}"
            shutil.copytree(work / "made", project)
            completed = run([sys.executable, "-m", "bundler", "update", str(project), "--template", str(template)])
            assert completed.returncode == 0, completed.stderr

        update_samples = timed(fresh_update, repeat=5)
        current = work / "u0"
        current_samples = timed(
            lambda: run([sys.executable, "-m", "bundler", "update", str(current), "--template", str(template)]), repeat=5
        )
        new_samples = timed(lambda: run([sys.executable, "-m", "bundler", "new", str(work / f"n{next(copies)}"), "--no-input"]), repeat=5)

        print(f"{'stored render (.bundler/template-base.tar.gz)':<44} {archive / 1024:8.1f} KiB for a {files}-file project")
        print(row("bundler new --no-input (render + archive)", new_samples))
        print(row("bundler update, one file merged", update_samples, "(includes a copy of the project)"))
        print(row("bundler update, already current", current_samples))
        print(f"{'load average (1 min) at the end':<44} {os.getloadavg()[0]:8.2f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
