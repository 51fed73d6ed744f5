# Generated from bundler/contracts/bundleschema.py by `python -m bundler.contracts.generate`: do not edit.
"""bundle.toml's schema: every key, the kind of value it holds, which must be there.

bundler (``bundler.target.bundle``) and the diagnostics (``bdiag.checkup``, which runs
inside the image, without bundler) both read bundle.toml through ``bundle_problem``,
so that a file one of them refuses the other refuses too, for the same first reason.
An unknown key is refused (a typo never passes silently); a value of the wrong kind
is named with its key. What needs the project's folder or bundler's own rules (a
lock path that stays inside the project, an accelerator version's form, an image
reference) is checked after this, by bundler alone.

**Adding a key** is one line in ``KEYS`` (or ``EXTENSION_KEYS`` for ``[[extensions]]``):
its section, its name and its check, e.g. ``"system_packages": package_list,`` under
``"build"``; then ``python -m bundler.contracts.generate`` writes the diagnostics' copy.
A check is a function of the value that answers None when it is fine, else what is
wrong (words that follow the key's name: ``"must be a string, got 5 (int)"``).

Standard library only: copied into diagnostics/ (generated, see ``generate.py``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

Check = Callable[[object], "str | None"]
BACKENDS = ("cuda", "rocm", "cpu")
IMPORT_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
SCHEMA_HINT = "See the schema in the comments of a freshly generated bundle.toml."


@dataclass(frozen=True)
class Problem:
    """The first thing wrong with a bundle.toml: ``text`` (no file name, no full stop), a hint, the value to name."""

    text: str
    hint: str = SCHEMA_HINT
    value: str = ""


def _shown(value: object) -> str:
    return f"{value!r} ({type(value).__name__})"


def text(value: object) -> str | None:
    return None if isinstance(value, str) else f"must be a string, got {_shown(value)}"


def required_text(value: object) -> str | None:
    """A string that is not empty (the key must be there: see ``REQUIRED``)."""
    if not isinstance(value, str):
        return text(value)
    return None if value.strip() else "is missing or empty"


def file_path(value: object) -> str | None:
    """A path to a file (bundler checks, in the project's folder, that it stays inside it)."""
    return (
        None if isinstance(value, str) and value.strip() and not value.endswith("/") else f"{value!r} is not a file path inside the project"
    )


def backend(value: object) -> str | None:
    wrong = required_text(value)
    if wrong or value in BACKENDS:
        return wrong
    return f"is an unknown backend {value!r}: use one of {', '.join(BACKENDS)}"


def flag(value: object) -> str | None:
    return None if isinstance(value, bool) else "must be true or false"


def megabytes(value: object) -> str | None:
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return None
    return f"must be a positive whole number of megabytes, got {value!r}"


def workers(value: object) -> str | None:
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return None
    return f"must be a whole number of DataLoader workers (0 or more), got {value!r}"


def import_name(value: object) -> str | None:
    wrong = required_text(value)
    return wrong or (None if IMPORT_NAME.match(str(value)) else f"{value!r} is not an import name")


def names(value: object) -> str | None:
    """A list of non-empty strings (``[]`` is fine)."""
    if isinstance(value, list) and all(isinstance(item, str) and item.strip() for item in value):
        return None
    return f"must be a list of names, got {value!r}"


def package_list(value: object) -> str | None:
    """A list (bundler's target/syspackages.py checks each Debian package name in it)."""
    return None if isinstance(value, list) else f"must be a list of Debian package names, got {value!r}"


# section -> key -> check; the key may be left out unless REQUIRED names it
KEYS: dict[str, dict[str, Check]] = {
    "project": {"name": required_text, "package": text, "entry": text},
    "target": {
        "backend": backend,
        "accelerator": text,
        "torch": required_text,
        "python": required_text,
        "platform": text,
        "base_image": text,
        "base_digest": text,
        "torch_index": text,
        "fabric": text,  # bundler's target/fabric.py says which names
    },
    "build": {
        "lock": file_path,
        "requirements": file_path,
        "size_budget_mb": megabytes,
        "system_packages": package_list,
        "install_project": flag,  # the project's own package built and installed in the image as a wheel
    },
    "diagnostics": {"memory_hook": text, "results_dir": text, "dataloader_workers": workers},
}
EXTENSION_KEYS: dict[str, Check] = {"name": required_text, "module": import_name, "compile": flag, "check": text}
REQUIRED = {"project": ("name",), "target": ("backend", "torch", "python"), "extensions": ("name", "module")}
REQUIRED_SECTIONS = ("project", "target")
OTHER_TOP_LEVEL = ("extensions", "inputs")  # [[extensions]] (EXTENSION_KEYS); [inputs]: bundler's own (name = project path)
HINTS = {
    "must be a string": 'Quote it: {key} = "…" in {where}.',
    "is missing or empty": 'Set {key} = "…" in {where}.',
    "is an unknown backend": "Use one of: " + ", ".join(BACKENDS) + ".",
    "must be true or false": "{key} = true or {key} = false.",
    "must be a positive whole number of megabytes": "For example {key} = 3000.",
    "is not a file path inside the project": "Name it relative to the project folder, as a fresh bundle.toml does.",
    "must be a list of Debian package names": 'For example {key} = ["libgl1", "libsndfile1"].',
    "is not an import name": "Give the name you would write after `import`, e.g. flash_attn.",
}


def bundle_problem(data: Mapping[str, object]) -> Problem | None:
    """The first thing bundle.toml's schema refuses in ``data`` (the parsed TOML); None when it accepts it."""
    unknown = _unknown(data, set(KEYS) | set(OTHER_TOP_LEVEL), "the top level")
    if unknown:
        return unknown
    for section, keys in KEYS.items():
        if section not in data:
            if section in REQUIRED_SECTIONS:
                return Problem(f"section [{section}] is missing", f"Add [{section}] with keys {', '.join(sorted(keys))}.", section)
            continue
        problem = _table(data[section], f"[{section}]", keys, REQUIRED.get(section, ()))
        if problem:
            return problem
    extensions = data.get("extensions", [])
    if not isinstance(extensions, list):
        return Problem("[[extensions]] must be an array of tables", "Write each as [[extensions]] with name and module keys.")
    for index, item in enumerate(extensions):
        problem = _table(item, f"[[extensions]] #{index + 1}", EXTENSION_KEYS, REQUIRED["extensions"])
        if problem:
            return problem
    if not isinstance(data.get("inputs", {}), dict):
        return Problem("[inputs] must be a table", 'Write [inputs] with lines like train = "data/train.csv".')
    return None


def _unknown(table: Mapping[str, object], allowed: set[str], where: str) -> Problem | None:
    unknown = sorted(set(table) - allowed)
    if unknown:
        return Problem(f"unknown key {unknown[0]!r} in {where}", f"Known keys there: {', '.join(sorted(allowed))}.", unknown[0])
    return None


def _table(table: object, where: str, keys: Mapping[str, Check], required: tuple[str, ...]) -> Problem | None:
    if not isinstance(table, dict):
        return Problem(f"{where} must be a table")
    unknown = _unknown(table, set(keys), where)
    if unknown:
        return unknown
    for key, check in keys.items():
        if key not in table:
            if key in required:
                return Problem(f"{where} {key} is missing or empty", f'Set {key} = "…" in {where}.', key)
            continue
        wrong = check(table[key])
        if wrong:
            hint = next((hint for start, hint in HINTS.items() if start in wrong), SCHEMA_HINT)
            value = table[key]
            return Problem(f"{where} {key} {wrong}", hint.format(key=key, where=where), value if isinstance(value, str) else key)
    return None
