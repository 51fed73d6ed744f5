"""Machine-specific paths of this project (written by `bundler paths --fix`; safe to edit).

A parameter NAME is read, in order, from the environment variable NAME, from the
git-ignored file .env.local at the project root, and from the "paths" object of
config/pilot.json (or config/paths.json), where "${NAME}" means it has no default.
Paths inside the project are computed from the project root, wherever it was copied.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[0]  # depth: written by `bundler paths --fix`
ENV_LOCAL = PROJECT_ROOT / ".env.local"
PARAMETER_FILES = ("config/pilot.json", "config/paths.json")
_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def project_path(relative: str = "") -> str:
    """An absolute path inside the project, from its root on this machine."""
    return os.path.join(str(PROJECT_ROOT), relative) if relative else str(PROJECT_ROOT)


def param(name: str) -> str:
    """The value of a path parameter: environment, then .env.local, then the declared default."""
    value = os.environ.get(name)
    if value is None:
        value = _env_local().get(name)
    if value is None:
        default = _declared().get(name)
        if default is not None and default != "${" + name + "}":
            value = default if os.path.isabs(default) else project_path(default)
    if value is None:
        raise KeyError(f"path parameter {name} is not set: export {name}=/path/on/this/machine or write {name}=... in {ENV_LOCAL}")
    return expand_value(value, os.environ)


_VARIABLE = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")


def expand_value(value: str, environ) -> str:
    """``$VAR``, ``${VAR}`` and a leading ``~`` expanded from ``environ`` (unknown variables kept)."""
    value = _VARIABLE.sub(lambda m: environ.get(m.group(1) or m.group(2), m.group(0)), value)
    home = environ.get("HOME") or (os.path.expanduser("~") if environ is os.environ else None)
    if (value == "~" or value.startswith(("~/", "~\\"))) and home:
        value = home.rstrip("/") + value[1:]
    return value


def param_path(name: str, rest: str = "") -> str:
    """The parameter's folder, joined with ``rest`` (a trailing slash is kept)."""
    return join(param(name), rest)


def join(base: str, rest: str) -> str:
    return base.rstrip("/\\") + "/" + rest.lstrip("/") if rest else base


def expand(value: str) -> str:
    """Replace each ${NAME} in a configuration value by the parameter's value."""
    return _REFERENCE.sub(lambda match: param(match.group(1)), value)


def parse_env_local(text: str) -> dict:
    """NAME=value lines of a dotenv file: comments, blanks and `export ` ignored, one pair of quotes removed."""
    values = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        name, _, value = line.removeprefix("export ").partition("=")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        values[name.strip()] = value
    return values


def _env_local() -> dict:
    return parse_env_local(ENV_LOCAL.read_text(encoding="utf-8")) if ENV_LOCAL.is_file() else {}


def _declared() -> dict:
    for name in PARAMETER_FILES:
        path = PROJECT_ROOT / name
        if path.is_file():
            try:
                declared = json.loads(path.read_text(encoding="utf-8")).get("paths", {})
            except (ValueError, AttributeError):
                return {}
            return declared if isinstance(declared, dict) else {}
    return {}
