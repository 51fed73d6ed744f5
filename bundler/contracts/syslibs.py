"""Which Debian package provides what a failed import lacks: a shared library, a program, or
an error's own words. The table is data (images/system-libraries.toml in bundler, its JSON
copy beside this module's copy in diagnostics/); this module is the one reading of it, so
`bundler build`'s hint and the diagnostics' hint on the rented machine name the same package.
"""

from __future__ import annotations

import re

SECTIONS = ("libraries", "programs", "messages", "headers", "pkgconfig", "build_programs", "build_libraries", "bindings")
_SONAME_STEM = re.compile(r"^(.+?\.so)(?:\.[0-9.]*)?$")
_MISSING_LIBRARY = re.compile(r"(lib[\w.+-]+\.so[\w.]*): cannot open shared object file")


def package_for_library(table: dict, soname: str) -> str:
    """The package that provides a shared library (libGL.so.1 -> libgl1); "" when the table does not know it."""
    match = _SONAME_STEM.match(soname)
    return table["libraries"].get(match.group(1) if match else soname, "")


def package_for_program(table: dict, program: str) -> str:
    """The package that provides an executable (ffmpeg -> ffmpeg); "" when the table does not know it."""
    return table["programs"].get(program, "")


def package_for_message(table: dict, error: str) -> tuple[str, str]:
    """The package whose absence an error's own words describe, and those words; ("", "") when none matches."""
    for words, package in table["messages"].items():
        if words in error:
            return package, words
    return "", ""


def missing_library(error: str) -> str:
    """The shared library a loader error names ("libGL.so.1: cannot open shared object file" -> libGL.so.1); "" if none."""
    match = _MISSING_LIBRARY.search(error)
    return match.group(1) if match else ""


_MISSING_HEADER = re.compile(r"fatal error: ([\w./+-]+): No such file or directory")
_MISSING_MODULE = re.compile(
    r"Package '?([\w.+-]+?)'?,? (?:required by '[^'\n]*', not found|was not found in the pkg-config search path)"
    r"|No package '([\w.+-]+)' found"
)
_MISSING_NAMED = re.compile(
    r"headers or library files could not be found for ([\w.+-]+)"
    r"|Could not find a package configuration file provided by \"([\w.+-]+)\""
    r"|Could NOT find ([\w.+-]+)",
    re.IGNORECASE,
)
_MISSING_PROGRAM = re.compile(
    r"(?<![\w.+-])([\w.+-]+)(?::| executable)? (?:command )?not found|No such file or directory: '([\w.+-]+)'"
    r"|(?:error: command|unable to execute) '(?:[\w./+-]*/)?([\w.+-]+)'(?: failed)?: No such file or directory"  # setuptools
)


def build_needs(table: dict, log: str) -> list[tuple[str, str]]:
    """(what a source build's log says it lacks, the Debian package with it), once per package, in the log's order:
    a header the compiler names, a module pkg-config cannot find, a library a setup or CMake names, a configuration
    program the setup runs."""
    found: dict[str, str] = {}
    hits = [(m.start(), f"the header {m.group(1)}", table["headers"].get(m.group(1), "")) for m in _MISSING_HEADER.finditer(log)]
    hits += [
        (m.start(), f"pkg-config's {m.group(1) or m.group(2)}", table["pkgconfig"].get(m.group(1) or m.group(2), ""))
        for m in _MISSING_MODULE.finditer(log)
    ]
    hits += [
        (m.start(), f"the program {name}", table["build_programs"].get(name, ""))
        for m in _MISSING_PROGRAM.finditer(log)
        for name in [m.group(1) or m.group(2) or m.group(3)]
    ]
    hits += [
        (m.start(), f"the library {name}", table["build_libraries"].get(name.lower(), ""))
        for m in _MISSING_NAMED.finditer(log)
        for name in [m.group(1) or m.group(2) or m.group(3)]
    ]
    for _, what, package in sorted(hits):
        if package and package not in found.values():
            found[what] = package
    return list(found.items())


def bundle_line(packages: list[str]) -> str:
    """The bundle.toml line that installs ``packages``: what a hint quotes."""
    return "system_packages = [" + ", ".join(f'"{name}"' for name in packages) + "]"
