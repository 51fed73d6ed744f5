"""System packages of a bundle: Debian package names installed in the dependency image.

Two sources, in this order, duplicates dropped: bundle.toml's ``[build] system_packages``
list and the project's ``apt.txt`` when it has one (repo2docker's file: one name a line,
``#`` comments and blank lines skipped). Each value is checked against Debian's rule for a
package name (lower-case letters, digits, ``+``, ``-``, ``.``; two characters at least,
starting with a letter or digit) and nothing else reaches the Dockerfile: no version, no
option, no shell.

``images/system-libraries.toml`` says which package provides a shared library or a
program a failed import names (libGL.so.1 -> libgl1), so the build's hint is one line.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

from bundler.contracts import syslibs
from bundler.errors import ProjectFileError
from bundler.fsutil import read_toml
from bundler.resources import resource_path

APT_TXT = "apt.txt"
DEBIAN_NAME = re.compile(r"[a-z0-9][a-z0-9+.-]+", re.ASCII)


def declared_packages(root: Path, path: Path, value: object) -> tuple[str, ...]:
    """``[build] system_packages`` of bundle.toml at ``path``, then apt.txt's names; ProjectFileError naming the bad one."""
    if not isinstance(value, list):
        raise ProjectFileError(
            f"{path}: [build] system_packages must be a list of Debian package names, got {value!r}.",
            hint='For example system_packages = ["libgl1", "libsndfile1"].',
            path=path,
            value=repr(value),
        )
    names = [check_name(item, f"{path}: [build] system_packages", path) for item in value]
    names += [name for _, name in read_apt_txt(root)]
    return tuple(dict.fromkeys(names))


def check_name(value: object, where: str, path: Path) -> str:
    if isinstance(value, str) and DEBIAN_NAME.fullmatch(value):
        return value
    raise ProjectFileError(
        f"{where}: {value!r} is not a Debian package name (lower-case letters, digits, '+', '-' and '.', starting with a letter "
        "or digit; no version, option or space).",
        hint='Write the package\'s name alone, e.g. "libgl1"; `apt-cache search` or packages.debian.org finds it.',
        path=path,
        value=value if isinstance(value, str) else repr(value),
    )


def read_apt_txt(root: Path) -> list[tuple[int, str]]:
    """apt.txt's package names with their line numbers; [] when the project has none."""
    path = Path(root) / APT_TXT
    if not path.is_file():
        return []
    if not path.resolve().is_relative_to(Path(root).resolve()):
        raise ProjectFileError(
            f"{path} points outside the project; bundler reads no file through a link out of it.",
            hint="Replace the link with the file itself.",
            path=path,
        )
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        raise ProjectFileError(f"{path} is not UTF-8 text ({error.reason}).", hint="Save it as UTF-8.", path=path) from None
    names = []
    for number, line in enumerate(text.splitlines(), 1):  # every Unicode line break ends a line
        stripped = line.split("#", 1)[0].strip()
        if stripped:
            names.append((number, check_name(stripped, f"{path}:{number}", path)))
    return names


@lru_cache(maxsize=1)
def provides() -> dict[str, dict[str, str]]:
    """The shipped table of which Debian package provides a library, a program or an error's words."""
    data = read_toml(resource_path("images") / "system-libraries.toml", hint="Reinstall bundler: the shipped table is damaged.")
    return {section: dict(data.get(section, {})) for section in syslibs.SECTIONS}


def package_for_library(soname: str) -> str:
    return syslibs.package_for_library(provides(), soname)


def package_for_program(program: str) -> str:
    return syslibs.package_for_program(provides(), program)


def package_for_message(error: str) -> tuple[str, str]:
    return syslibs.package_for_message(provides(), error)


def binding_for(distribution: str) -> tuple[str, str] | None:
    """(Debian package, its release) for Python bindings that build only against the system library's own release."""
    package, _, release = provides()["bindings"].get(distribution.lower().replace("_", "-"), "").partition(" ")
    return (package, release) if package and release else None


def build_needs(log: str) -> list[tuple[str, str]]:
    return syslibs.build_needs(provides(), log)
