"""Stage 1: which interpreter runs, and is it the one the bundle installed into."""

from __future__ import annotations

import os

NAME = "interpreter"
NEEDS_TORCH = False


def run(checkup, result) -> None:
    probe = checkup.probe
    environ = probe.environ()
    executable, prefix, base_prefix = probe.executable(), probe.prefix(), probe.base_prefix()
    version = ".".join(str(part) for part in probe.python_version())
    in_venv = os.path.realpath(prefix) != os.path.realpath(base_prefix)
    result.values.update(executable=executable, version=version, prefix=prefix, venv=in_venv, bundle_python=environ.get("BUNDLE_PYTHON"))
    result.summary = f"Python {version}" + (" (venv)" if in_venv else "")
    if checkup.bundle is not None:
        result.values["bundle"] = checkup.bundle.path
        if checkup.bundle.error:
            result.fail(
                f"{checkup.bundle.path} {checkup.bundle.error}",
                f"Fix {checkup.bundle.path} (see the schema in bundler's bundle.py), or pass --backend and --project to check without it.",
            )
            return
    if checkup.order_error is not None:
        result.fail(checkup.order_error.message, checkup.order_error.hint)
        return
    if checkup.order is not None:
        result.values["plan"] = checkup.order.plan
    _check_bundle_python(result, environ.get("BUNDLE_PYTHON"), executable, prefix, base_prefix)
    wanted = checkup.bundle.target.get("python") if checkup.bundle else None
    if wanted:
        minor = ".".join(version.split(".")[:2])
        result.values["target_python"] = wanted
        if minor != wanted:
            result.fail(
                f"Python {minor} runs, but the bundle targets Python {wanted}",
                f"The lock's wheels are built for Python {wanted}: run with that interpreter (the image's /opt/venv/bin/python), or "
                f"re-lock with `bundler lock --python {minor}`.",
            )


def _check_bundle_python(result, bundle_python, executable, prefix, base_prefix) -> None:
    if not bundle_python:
        result.note("BUNDLE_PYTHON is not set (outside a bundler image): nothing to compare the interpreter with")
        return
    expected_root = _venv_root(bundle_python)
    if expected_root:
        same = _same_path(prefix, expected_root)
        wanted = f"the environment {expected_root}"
    else:  # a system interpreter: same binary, and not inside some venv built on it
        same = _same_path(executable, bundle_python) and _same_path(prefix, base_prefix)
        wanted = bundle_python
    result.values["expected_environment"] = expected_root or bundle_python
    if not same:
        result.fail(
            f"this is {executable} (prefix {prefix}), not {wanted} that the bundle installed into",
            f"Run `{bundle_python} diagnostics/run.py`, or activate that environment; do not reinstall packages before checking which "
            "interpreter runs.",
        )


def _venv_root(python: str) -> str | None:
    """The venv a python path belongs to (its bin/ folder's parent holds pyvenv.cfg)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(python)))
    return root if os.path.isfile(os.path.join(root, "pyvenv.cfg")) else None


def _same_path(a: str, b: str) -> bool:
    # A venv's python is a symlink to the base interpreter: compare prefixes, never resolved binaries.
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.realpath(a) == os.path.realpath(b)
