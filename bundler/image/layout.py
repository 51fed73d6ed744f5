"""Where things are inside an image made by `bundler build`: one definition for the
Dockerfile templates (substituted in), the build's checks and `bundler diagnose --image`.

The entry point (images/entrypoint.sh) reads the same places from the ENV the final
Dockerfile sets, so a rebuilt image and an old one answer alike.
"""

from __future__ import annotations

BUNDLE_ROOT = "/opt/bundle"
PROJECT = f"{BUNDLE_ROOT}/project"
DIAGNOSTICS = f"{BUNDLE_ROOT}/diagnostics"
ENTRYPOINT = f"{BUNDLE_ROOT}/entrypoint.sh"
PROJECT_WHEEL = f"{BUNDLE_ROOT}/wheel"  # the project's own wheel and the one hashed line that installs it
VENV = "/opt/venv"
PYTHON = f"{VENV}/bin/python"
USER = "bundle"
UID = 10001
DIAGNOSTICS_REPORT = "/tmp/bundle-diagnostics.json"
# The one file time of every path bundler writes into a layer (2000-01-01): layers then
# hold content, not the clock, so the same inputs give the same layer diff IDs.
FILE_TIME = 946684800
WHEELHOUSE_IN_CONTEXT = "/tmp/wheelhouse"  # the context route's copy (thrown away with its stage)


def template_values() -> dict[str, str]:
    """The ${…} names the Dockerfile templates under images/ may use for these places."""
    return {
        "bundle_root": BUNDLE_ROOT,
        "project": PROJECT,
        "diagnostics": DIAGNOSTICS,
        "entrypoint": ENTRYPOINT,
        "venv": VENV,
        "venv_python": PYTHON,
        "user": USER,
        "uid": str(UID),
    }
