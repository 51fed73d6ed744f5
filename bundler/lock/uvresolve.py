"""Resolution with uv (`bundler lock --resolver uv`): for any Target platform, on this host.

uv resolves for a platform and Python it is told (``--python-platform
aarch64-manylinux_2_35 --python-version 3.11``) instead of the interpreter it runs on, so
an aarch64 (GH200/GB200) Target locks from an x86-64 workstation without a container.
Its index strategy is set to pip's (candidates merged from every index), so that both
resolvers give the same pins for the same Target; the hashes come from the index pages
as for pip-tools (bundler/lock/hashes.py).
"""

from __future__ import annotations

import os
import re
import subprocess

from bundler.errors import UsageError
from bundler.lock.requirements import REQUIREMENTS_IN
from bundler.pipsettings import PipSettings
from bundler.target.versions import MANYLINUX_GLIBC

_BOX = re.compile(r"[\u2500-\u257f\u00d7]+")  # uv's tree drawing and its "×" marker


def uv_binary() -> str:
    """The uv executable of the `uv` distribution (PyPI), or a UsageError saying how to get it."""
    try:
        import uv
    except ImportError:
        raise UsageError(
            "--resolver uv needs uv, which is not installed in bundler's environment.",
            hint="Install it with `python -m pip install uv` (or `pip install 'bundler[uv]'`), or use the default --resolver pip-tools.",
            value="uv",
        ) from None
    return uv.find_uv_bin()


def uv_version() -> str:
    completed = subprocess.run([uv_binary(), "--version"], capture_output=True, text=True)
    return completed.stdout.split()[1] if completed.returncode == 0 and completed.stdout.split()[1:] else "unknown"


def python_platform(platform: str) -> str:
    """uv's name of a Target platform: linux_aarch64 -> aarch64-manylinux_2_35."""
    return f"{platform.split('_', 1)[1]}-manylinux_2_{MANYLINUX_GLIBC}"


def uv_argv(target, urls: list[str], output: str) -> list[str]:
    argv = [
        uv_binary(),
        "pip",
        "compile",
        "--no-config",
        "--no-header",
        "--quiet",
        "--python-platform",
        python_platform(target.platform),
        "--python-version",
        target.python,
        "--index-strategy",
        "unsafe-best-match",  # pip's behaviour: every index's candidates, the best version wins
        "--index-url",
        urls[0],
    ]
    for url in urls[1:]:
        argv += ["--extra-index-url", url]
    return [*argv, "-o", output, REQUIREMENTS_IN]


def uv_environment(settings: PipSettings, cache: str) -> dict[str, str]:
    """The host's network settings for uv; none of its own configuration or the host's pip's."""
    env = {key: value for key, value in os.environ.items() if not key.startswith(("UV_", "PIP_"))}
    env.update({"UV_CACHE_DIR": f"{cache}/uv", "UV_NO_CONFIG": "1", "UV_PYTHON_DOWNLOADS": "never"})
    if settings.cert:
        env["SSL_CERT_FILE"] = settings.cert
    if settings.proxy:
        env.update({"HTTPS_PROXY": settings.proxy, "HTTP_PROXY": settings.proxy})
    if settings.timeout:
        env["UV_HTTP_TIMEOUT"] = settings.timeout
    env["UV_HTTP_RETRIES"] = os.environ.get("BUNDLER_PIP_RETRIES", "5")
    return env


def uv_summary(log: str) -> list[str]:
    """uv's explanation of a failure, one sentence per line, without its tree drawing."""
    lines = [_BOX.sub("", line).strip() for line in log.splitlines()]
    return [line for line in lines if line and not line.startswith(("hint:", "help:"))][:3]
