"""What a found path is, and what it becomes: a project-relative path, or a named
parameter (one per machine-specific folder, kept stable through .env.local)."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from bundler.portability.bundle_paths import parse_env_local

_PARAM_RE = re.compile(r"[^A-Z0-9]+")


@dataclass(frozen=True)
class Rewrite:
    """Where a found path points: inside the project (relative) or a parameter."""

    replacement: str
    relative: str | None = None
    parameter: str | None = None
    value: str | None = None
    rest: str = ""
    prefix_length: int = 0  # how much of the text as written the parameter or the project root stands for


_HOME_SEGMENTS = ("home", "users")


def split_home(shape: str, text: str) -> tuple[str, list[str]]:
    """(the machine-specific prefix as written, the components after it)."""
    if shape == "home-lookup":
        inner = re.search(r"[\"']~([^\"']*)[\"']", text) if "expanduser" in text else None
        rest = inner.group(1) if inner else ""
        return "~", [c for c in re.split(r"[\\/]", rest) if c]
    if shape in ("windows-user", "windows-drive", "home-var", "tilde") and "\\" in text:
        parts = re.split(r"[\\/]+", text)
        count = {"windows-user": 3, "windows-drive": 1}.get(shape, 1)
        return "\\".join(parts[:count]), [c for c in parts[count:] if c]
    parts = text.split("/")
    if shape in ("tilde", "home-var", "windows-drive"):
        return parts[0], [c for c in parts[1:] if c]
    if shape == "windows-user":
        return "/".join(parts[:3]), [c for c in parts[3:] if c]
    if shape == "wsl-user":
        return "/".join(parts[:5]), [c for c in parts[5:] if c]
    if shape == "colab-drive":
        return "/".join(parts[:4]), [c for c in parts[4:] if c]
    if shape == "home":
        if parts[1] == "root":
            return "/root", [c for c in parts[2:] if c]
        count = next((i + 2 for i, part in enumerate(parts) if part.lower() in _HOME_SEGMENTS and i + 1 < len(parts)), 3)
        return "/".join(parts[:count]), [c for c in parts[count:] if c]
    if shape == "absolute":  # /scratch/<group>/…, /data/<user>/…: the first two folders name it
        names = [c for c in parts if c]
        count = 2 if len(names) >= 3 else 1
        return "/" + "/".join(names[:count]), names[count:]
    if shape == "temp-dir":
        for prefix in ("/private/var/folders", "/var/folders", "/private/tmp", "/var/tmp", "/dev/shm", "/tmp"):
            if text == prefix or text.startswith(prefix + "/"):
                return prefix, [c for c in text[len(prefix) :].split("/") if c]
    return "", [c for c in parts if c]


def folder_key(value: str) -> str:
    """One key per folder, whatever its spelling: ``$HOME/x``, ``${HOME}/x`` and ``~/x`` are one folder."""
    key = re.sub(r"^(?:\$HOME|\$\{HOME\}|%USERPROFILE%|\$env:USERPROFILE|\$env:HOME|\$USER_HOME\$)(?=$|[\\/])", "~", value)
    key = key.rstrip("/\\") or key
    if re.match(r"^[A-Za-z]:[\\/]", key):
        key = key[0].upper() + key[1:].replace("/", "\\")
        key = re.sub(r"\\+", r"\\", key)
    return key


def parameter_name(component: str | None) -> str:
    if not component:
        return "HOME_ROOT"
    stem = component.lstrip(".")
    name = _PARAM_RE.sub("_", stem.upper()).strip("_") or "HOME"
    if name[0].isdigit():
        name = "P_" + name
    return f"{name}_ROOT"


def _value_end(shape: str, text: str, tail_parts: int) -> int:
    """The offset in ``text`` where the parameter's folder ends and its last ``tail_parts`` components begin."""
    parts = list(re.finditer(r"[^/\\]+" if shape.startswith("windows") or "\\" in text else r"[^/]+", text))
    if not parts or tail_parts >= len(parts):
        return 0
    return parts[len(parts) - tail_parts - 1].end()


def classify(root: Path, shape: str, text: str, exists) -> Rewrite:
    trailing = "/" if text.endswith(("/", "\\")) and len(text) > 1 else ""
    if shape == "project-absolute":
        relative = _strip_any_root(root, text)
        written = _value_end(shape, text, len([c for c in relative.split("/") if c]))
        relative = (relative + trailing) if relative else "."
        return Rewrite(replacement=relative, relative=relative, prefix_length=written)
    if shape in ("remote", "home-built", "absolute-built"):
        return Rewrite(replacement=text)  # another machine's folder, a home built from a user name: never rewritten
    if shape == "home-lookup" and text.endswith("home()"):
        return Rewrite(replacement="${HOME_ROOT}", parameter="HOME_ROOT", value="~")
    prefix, components = split_home(shape, text)
    inside = _project_tail(root.name, components, exists)
    if inside is not None:
        written = _value_end(shape, text, len([c for c in inside.split("/") if c]) if inside != "." else 0)
        inside = inside + trailing if inside != "." else inside
        return Rewrite(replacement=inside, relative=inside, prefix_length=written)
    first = components[0] if components else None
    if first is not None and len(components) == 1 and "." in first.lstrip(".") and not trailing:
        first = None  # a single file right in the home folder: the home folder is the parameter
    if shape == "temp-dir" and first is None:
        name = "TMP_ROOT"
    elif shape == "absolute" and first is None:
        name = parameter_name(prefix.rsplit("/", 1)[-1])  # /homework/notes.txt: HOMEWORK_ROOT
    else:
        name = parameter_name(first)
    separator = "\\" if "\\" in prefix else "/"
    if shape == "windows-drive" and first is None:
        return Rewrite(replacement=text, value=None)  # a drive's root: nothing to name
    value = (prefix + (separator + first if first else "")).replace("\\ ", " ")  # a shell's escaped space is a space
    tail = components[1:] if first else components
    rest = "/".join(tail).replace("\\ ", " ")
    rest = rest + trailing if rest else trailing
    written = _value_end(shape, text, len(tail)) if shape != "home-lookup" else 0
    return Rewrite(replacement=_placeholder(name, rest), parameter=name, value=value, rest=rest, prefix_length=written)


def _placeholder(name: str, rest: str) -> str:
    return "${" + name + "}" + ("/" + rest.lstrip("/") if rest else "")


ENV_LOCAL = ".env.local"


def read_env_local(path: Path) -> dict[str, str]:
    """The NAME=value pairs of a .env.local, parsed as the helper written into projects parses them."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return {}
    return parse_env_local(text)


class ParameterRegistry:
    """One name per machine-specific value, stable across runs (.env.local is read first)."""

    def __init__(self, existing: dict[str, str]) -> None:
        self.existing = dict(existing)
        self.assigned: dict[str, str] = {}
        self._by_value = {folder_key(value): name for name, value in existing.items()}

    def seed(self, name: str, value: str) -> None:
        """Reuse a name handed out by an earlier pass (a scan before a fix)."""
        if folder_key(value) not in self._by_value:
            self._by_value[folder_key(value)] = name
            self.existing.setdefault(name, value)

    def name(self, target: Rewrite) -> Rewrite:
        assert target.parameter is not None, "only a rewrite into a parameter is named"
        value = target.value or ""
        name = self._by_value.get(folder_key(value))
        if name is None:
            name, number = target.parameter, 2
            while name in self.existing or name in self.assigned:
                name = f"{target.parameter}_{number}"
                number += 1
            self._by_value[folder_key(value)] = name
        self.assigned.setdefault(name, self.existing.get(name, value))
        return Rewrite(_placeholder(name, target.rest), None, name, value, target.rest, target.prefix_length)


def _strip_any_root(root: Path, text: str) -> str:
    for candidate in (os.path.realpath(root), os.path.abspath(root)):
        if text == candidate or text.startswith(candidate + "/"):
            return text[len(candidate) :].strip("/")
    return text.strip("/")


def _project_tail(root_name: str, components: list[str], exists) -> str | None:
    """The project-relative path an absolute path from any machine points at, if any.

    A tail counts when the folder before it carries the project's name and the tail's
    first part exists here, or when a tail of two or more parts exists in the project.
    """
    for index in range(len(components)):
        tail = components[index:]
        if index > 0 and components[index - 1] == root_name and exists(tail[0]):
            return "/".join(tail)
        if len(tail) >= 2 and exists("/".join(tail)):
            return "/".join(tail)
    if components and components[-1] == root_name:
        return "."
    return None
