"""The dependency checks of a new image, run side by side (a CUDA image's ldd pass and torch's
import each take seconds).

``python -m bundler.inimage.runner CHECKS_JSON``: CHECKS_JSON is a list of ``{"name", "argv"}``;
each check's finding is the last stdout line that starts with ``{``. Prints one JSON list of
``{"name", "ok", "finding"[, "output"]}`` and exits 1 when any check failed.
"""

from __future__ import annotations

import json
import subprocess
import sys

OUTPUT_TAIL = 1500


def finding(stdout: str) -> dict:
    lines = [line for line in stdout.splitlines() if line.startswith("{")]
    try:
        found = json.loads(lines[-1]) if lines else {}
    except ValueError:
        return {}
    return found if isinstance(found, dict) else {}


def run(checks: list) -> list:
    running = [subprocess.Popen(c["argv"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for c in checks]
    results = []
    for index, process in enumerate(running):
        check = checks[index]
        out, err = process.communicate()
        result = {"name": check["name"], "ok": process.returncode == 0, "finding": finding(out)}
        if process.returncode:
            result["output"] = (out + err).strip()[-OUTPUT_TAIL:]
        results.append(result)
    return results


def main(argv: list | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    results = run(json.loads(args[0]))
    print(json.dumps(results, sort_keys=True))
    return 0 if all(r["ok"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
