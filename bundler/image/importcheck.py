"""The smoke test's second half: every direct dependency imports in the new image.

It runs the image's own diagnostics (``bdiag.imports``, the same code as the packages
stage on the rented box) in an offline container: each direct dependency's top-level
modules imported in fresh interpreters within a time bound. A failure names the module,
the error and a hint; the build then removes the image and tags nothing.
"""

from __future__ import annotations

import json
import os

from bundler.engine import gpu_run_options
from bundler.errors import BuildError
from bundler.image import layout

BUDGET_S = float(os.environ.get("BUNDLER_IMPORT_BUDGET", "300"))


def import_command(bundle) -> list[str]:
    command = [layout.PYTHON, "-m", "bdiag.imports", "--lock", f"{layout.PROJECT}/{bundle.lock}", "--budget", str(int(BUDGET_S))]
    return command + (["--gpu-target"] if bundle.target.backend in ("cuda", "rocm") else [])


def check_imports(engine, image_id: str, bundle, say=lambda text: None) -> dict:
    """Run the import check in ``image_id``; its report, or BuildError naming what does not import."""
    options, _, gpu = gpu_run_options(bundle.target.backend)
    container = engine.containers.create(
        image_id,
        import_command(bundle),
        environment={"PYTHONPATH": layout.DIAGNOSTICS},
        network_mode="none",
        **(options if gpu else {}),
    )
    try:
        container.start()
        code = int(container.wait(timeout=BUDGET_S + 120).get("StatusCode", 1))
        output = container.logs(stdout=True, stderr=False).decode("utf-8", "replace")
        errors = container.logs(stdout=False, stderr=True).decode("utf-8", "replace")
    finally:
        container.remove(force=True)
    line = next((text for text in reversed(output.strip().splitlines()) if text.startswith("{")), "")
    try:
        report = json.loads(line)
    except ValueError:
        raise BuildError(
            f"the import check in the new image exited {code} without a report: {(errors or output).strip()[-600:]}",
            hint="The image's diagnostics folder or interpreter is broken: rebuild with `bundler build`.",
            value=code,
        ) from None
    for item in report.get("warnings", []):
        say(f"note: import {_describe(item)} ({item['hint']})")
    if report.get("failures"):
        listed = "\n  ".join(f"{_describe(item)}\n    Hint: {item['hint']}" for item in report["failures"][:6])
        more = len(report["failures"]) - 6
        raise BuildError(
            f"direct dependencies do not import in the new image; the image was removed and nothing tagged:\n  {listed}"
            + (f"\n  … and {more} more" if more > 0 else ""),
            hint="Follow the hint of each module above (requirements.in, then `bundler lock` and `bundler build`).",
            value=report["failures"][0]["module"] or report["failures"][0]["distribution"],
            result={"imports": report},
        )
    return report


def _describe(item: dict) -> str:
    what = f"{item['module']} ({item['distribution']} {item['version']})" if item["module"] else item["distribution"]
    return f"{what}: {item['error']}"
