"""What each file `bundler init` writes says: bundle.toml through tomlkit, requirements.in
with every line's source, .dockerignore from the folder's own ignore rules."""

from __future__ import annotations

import json
import re

import tomlkit

from bundler.adopt.model import SourceRead
from bundler.adopt.survey import Layout
from bundler.contracts.secrets import SECRET_PATTERNS
from bundler.image.context import clean_patterns, is_ignored
from bundler.target.bundle import Target

REQUIREMENTS_IN = "requirements.in"
CACHES = [
    "**/__pycache__/",
    "**/*.py[cod]",
    "**/.ipynb_checkpoints/",
    ".venv/",
    "venv/",
    ".cache/",
    "**/.pytest_cache/",
    "**/.mypy_cache/",
    "*.bak",
]
# The secret rules of bundler's own context and checks (bundler/contracts/secrets.py), as .dockerignore lines.
SECRETS = [f"**/{pattern}" for pattern in SECRET_PATTERNS]


def bundle_toml(
    name: str,
    package: str,
    entry: str,
    entry_note: str,
    target: Target,
    requirements: str,
    guesses: list[str],
    install_project: bool = False,
) -> str:
    document = tomlkit.document()
    document.add(tomlkit.comment("bundle.toml: where this project will run (the Target) and how it is packaged. Written by"))
    document.add(tomlkit.comment("`bundler init`; `bundler lock --cuda VER | --rocm VER | --cpu [--torch X.Y.Z] [--python 3.X]`"))
    document.add(tomlkit.comment("rewrites [target] after checking the combination exists."))
    for guess in guesses:
        document.add(tomlkit.comment(f"guessed: {_one_line(guess)}"))
    document.add(tomlkit.nl())
    project = tomlkit.table()
    project.add("name", toml_string(name))
    project.add("package", toml_string(package))
    if entry_note:
        project.add(tomlkit.comment(_one_line(entry_note)))
    project.add("entry", toml_string(entry))
    project["entry"].comment("run from the project root, in the image too")
    document.add("project", project)
    section = tomlkit.table()
    for key in ("backend", "accelerator", "torch", "python", "platform", "base_image", "base_digest"):
        section.add(key, toml_string(getattr(target, key)))
    document.add("target", section)
    build = tomlkit.table()
    build.add("lock", "requirements-rebuild.txt")
    if requirements != REQUIREMENTS_IN:
        build.add("requirements", toml_string(requirements))
        build["requirements"].comment("the project's own requirements file: `bundler lock` reads it as it is")
    if install_project:
        flag = tomlkit.item(True)
        flag.comment("the project's own package, built by its build backend, installed in the image as a wheel")
        build.add("install_project", flag)
    build.add("size_budget_mb", 3000)
    document.add("build", build)
    return tomlkit.dumps(document)


def toml_string(value: str) -> object:
    """A TOML basic string whose every Unicode line break (and DEL) is an escape, so the file keeps
    one line per key whatever reads it; parsed back by tomlkit into its item."""
    text = json.dumps(value, ensure_ascii=False)  # \", \\, \n, \t and \u00XX are TOML's escapes too
    text = re.sub("[\x7f\x85\u2028\u2029]", lambda match: f"\\u{ord(match.group()):04x}", text)
    return tomlkit.value(text)


def requirements_in(source: SourceRead, reason: str) -> str:
    """Each dependency on a line of its own with its source; one that would not stay one line
    (a line break of any kind inside it) is written only as a comment, for the user to decide."""
    broken = [d for d in source.dependencies if len(f"{d.line}\n".splitlines()) > 1]
    source.dependencies = [d for d in source.dependencies if d not in broken]
    source.unreadable += [f"{_one_line(d.origin)}: {d.line!r} holds a line break" for d in broken]
    lines = [
        f"# The lock's input, written by `bundler init` from {source.file}: {_one_line(reason)}.",
        "# Each line says where it came from. torch's build comes from bundle.toml [target].",
    ]
    width = max((len(d.line) for d in source.dependencies), default=0)
    lines += [f"{dependency.line.ljust(width)}  # {_one_line(dependency.origin)}" for dependency in source.dependencies]
    lines += [f"# not read: {_one_line(item)}" for item in source.unreadable]
    lines += [f"# unmapped conda package: {_one_line(item)}" for item in source.unmapped]
    return "\n".join(lines) + "\n"


def dockerignore(layout: Layout, keep: list[str]) -> str:
    """A new .dockerignore: run outputs, version control, the .gitignore's exclusions, caches,
    secrets, and the data and weights the code does not name; what bundler needs re-included."""
    lines = ["# The build context of `bundler build`: the repository as it is, less what follows.", "runs/", ".git/"]
    from_git = [pattern for pattern in (_from_gitignore(line) for line in layout.gitignore) if pattern and not _drops_code(pattern, layout)]
    if from_git:
        lines += ["", "# from .gitignore", *from_git]
    lines += ["", "# caches", *CACHES, "", "# secrets and machine-specific values", *SECRETS]
    left_out = [name for name in layout.left_out if len(f"{name}\n".splitlines()) == 1]  # a name is one line of the file
    if left_out:
        lines += ["", "# data, weights and run outputs the code does not name (remove a line to send it)", *left_out]
    patterns = clean_patterns(lines)
    needed = [name for name in keep if is_ignored(patterns, name)]
    if needed:
        lines += ["", "# bundler's own files, which the image needs", *(f"!{name}" for name in needed)]
    return "\n".join(lines) + "\n"


def _drops_code(pattern: str, layout: Layout) -> bool:
    """A .gitignore rule that matches Python files the repository has (git keeps tracked files it
    ignores): left out of .dockerignore, so that no code of the repository is dropped from the image."""
    from bundler.engine.dockerignore import matcher

    if pattern.startswith("!"):
        return False
    matches = matcher([pattern])
    return any(matches(prefix) for name in layout.python_files for prefix in _prefixes(name))


def _prefixes(relative: str) -> list[str]:
    parts = relative.split("/")
    return ["/".join(parts[:end]) for end in range(1, len(parts) + 1)]


def missing_ignores(existing: str) -> list[str]:
    """The secret and run-output lines an existing .dockerignore lacks (as text; what it covers is not re-added)."""
    present = set(clean_patterns(existing.splitlines()))
    return [line for line in ["runs/", *SECRETS] if line not in present and line.rstrip("/") not in present]


def _from_gitignore(line: str) -> str:
    """A .gitignore line as a .dockerignore line: a name without a slash matches at any depth there."""
    text = line.strip()
    if not text or text.startswith("#"):
        return ""
    if text.startswith("!"):
        rest = _from_gitignore(text[1:])
        return f"!{rest}" if rest else ""
    anchored = text.startswith("/") or "/" in text.rstrip("/")
    text = text.lstrip("/")
    return text if anchored or text.startswith("**") else f"**/{text}"


def _one_line(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()
