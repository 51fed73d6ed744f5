"""What rewritten files need beside them: the helper module, the parameters declared
in the config, their original values in .env.local, and .gitignore entries."""

from __future__ import annotations

import json
from pathlib import Path, PurePosixPath

from bundler.contracts.dotenv import assignment, writable
from bundler.portability.classify import ENV_LOCAL, read_env_local
from bundler.portability.rewrite import _json_indent

HELPER_NAME = "_bundle_paths.py"
PARAMETER_FILES = ("config/pilot.json", "config/paths.json")
_DEPTH_LINE = "PROJECT_ROOT = Path(__file__).resolve().parents[0]  # depth: written by `bundler paths --fix`"


def _support_files(root: Path, parameters: dict[str, str], helper_dirs: set[str]) -> list[tuple[str, str]]:
    files = []
    for folder in sorted(helper_dirs):
        helper = PurePosixPath(folder) / HELPER_NAME if folder != "." else PurePosixPath(HELPER_NAME)
        depth = 0 if folder == "." else len(PurePosixPath(folder).parts)
        text = helper_source(depth)
        existing = root / helper
        if not existing.exists() or existing.read_text(encoding="utf-8") != text:
            files.append((str(helper), text))
    if parameters:
        env_local = _env_local_text(root, parameters)
        if env_local is not None:
            files.append((ENV_LOCAL, env_local))
        declared = _declare_parameters(root, parameters)
        if declared is not None:
            files.append(declared)
        gitignore = _gitignore_text(root)
        if gitignore is not None:
            files.append((".gitignore", gitignore))
    return files


def _env_local_text(root: Path, parameters: dict[str, str], *, for_proof: bool = False) -> str | None:
    """.env.local with the missing parameters added, or None when none is missing. A value no line
    can carry is left out; ``for_proof`` writes it raw instead, so that a shell proof still finds
    the rewrite's own fault (the file is refused for the value in any case)."""
    path = root / ENV_LOCAL
    existing = read_env_local(path)
    missing = {name: value for name, value in parameters.items() if name not in existing}
    if not missing:
        return None
    text = (
        path.read_text(encoding="utf-8")
        if path.exists()
        else (
            "# Machine-specific values of this project's path parameters, kept by `bundler paths --fix`.\n"
            "# Git-ignored: on another machine, set the environment variable or write this file again.\n"
        )
    )
    if text and not text.endswith("\n"):
        text += "\n"
    lines = [
        assignment(name, value) if writable(name, value) is None else f"{name}={value}"
        for name, value in sorted(missing.items())
        if for_proof or writable(name, value) is None
    ]
    return text + "".join(line + "\n" for line in lines)


def _declare_parameters(root: Path, parameters: dict[str, str]) -> tuple[str, str] | None:
    target = next((name for name in PARAMETER_FILES if (root / name).is_file()), PARAMETER_FILES[-1])
    path = root / target
    text = path.read_text(encoding="utf-8") if path.exists() else "{}"
    try:
        document = json.loads(text)
    except ValueError:
        return None  # an invalid config is `bundler check`'s to report; do not touch it
    if not isinstance(document, dict):
        return None
    declared = document.setdefault("paths", {})
    if not isinstance(declared, dict):
        return None
    added = False
    for name in sorted(parameters):
        if name not in declared:
            declared[name] = "${" + name + "}"
            added = True
    if not added:
        return None
    return target, json.dumps(document, indent=_json_indent(text) if path.exists() else 2, ensure_ascii=False) + "\n"


def _gitignore_text(root: Path) -> str | None:
    import fnmatch

    path = root / ".gitignore"
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    patterns = [line.strip().lstrip("/") for line in text.splitlines() if line.strip() and not line.startswith("#")]
    wanted = []
    if not any(fnmatch.fnmatch(ENV_LOCAL, pattern) for pattern in patterns):
        wanted.append(ENV_LOCAL)
    if not any(pattern.rstrip("/") in (".bundler", ".bundler/*", ".bundler/backups") for pattern in patterns):
        wanted.append(".bundler/backups/")  # the rest of .bundler/ (the stored template render) is the project's
    if not wanted:
        return None
    if text and not text.endswith("\n"):
        text += "\n"
    return text + "# Kept by `bundler paths --fix`: machine-specific values and backups.\n" + "".join(f"{w}\n" for w in wanted)


def foreign_helper(root: Path, folder: str) -> str | None:
    """Why the helper cannot be written in ``folder``: a file of that name that bundler did not write (or a link), or None."""
    path = root / folder / HELPER_NAME
    if path.is_symlink():
        return f"{path.relative_to(root).as_posix()} is a link; the helper is never written through one"
    if not path.exists():
        return None
    try:
        first = path.read_text(encoding="utf-8").split("\n", 1)[0]
    except (OSError, UnicodeDecodeError):
        first = ""
    if first != helper_source(0).split("\n", 1)[0]:
        return f"{path.relative_to(root).as_posix()} exists and is not bundler's helper; it is never overwritten (rename it)"
    return None


def helper_source(depth: int) -> str:
    """bundle_paths.py as written into a project: its root ``depth`` folders above the helper."""
    text = (Path(__file__).parent / "bundle_paths.py").read_text(encoding="utf-8")
    return text.replace(_DEPTH_LINE, f"PROJECT_ROOT = Path(__file__).resolve().parents[{depth}]")
