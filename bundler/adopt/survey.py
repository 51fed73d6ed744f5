"""What an adopted folder holds, found as it is laid out: its code, its packages, the
command it runs, its own Dockerfile and ignore files, and the data, checkpoints and run
outputs that should not enter an image."""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from bundler.adopt.sources import Sources

SKIPPED_DIRS = {
    ".git",
    ".hg",
    ".svn",
    ".venv",
    "venv",
    "env",
    "node_modules",
    "__pycache__",
    ".tox",
    ".mypy_cache",
    ".pytest_cache",
    "build",
    "dist",
}
OUTPUT_DIRS = ("wandb", "lightning_logs", "mlruns", "outputs", "multirun", ".neptune", "tb_logs")
DATA_DIRS = ("data", "datasets", "checkpoints", "ckpt", "ckpts", "weights", "pretrained", "models_cache")
WEIGHT_SUFFIXES = (".pt", ".pth", ".ckpt", ".safetensors", ".bin", ".h5", ".hdf5", ".npz", ".npy", ".pkl", ".onnx", ".tar", ".zip", ".gz")
LARGE = 1 << 20  # a weight or data file from this size on is left out unless the code names it
_COMMAND = re.compile(r"(?:^|[\s;&|`(])(python3?(?:\.\d+)?\s+(?:-m\s+[A-Za-z_][\w.]*|[\w./-]+\.py))")
MAX_FILES = 20000


@dataclass
class Layout:
    root: Path
    python_files: list[str] = field(default_factory=list)
    notebooks: list[str] = field(default_factory=list)
    packages: list[str] = field(default_factory=list)  # top-level import packages ("src/x" counted as x)
    src_layout: bool = False
    dockerfiles: list[str] = field(default_factory=list)
    gitignore: list[str] = field(default_factory=list)
    left_out: list[str] = field(default_factory=list)  # .dockerignore patterns for data, weights and outputs
    code_text: str = ""  # every Python file's text joined: what the code names

    def names_in_code(self, relative: str) -> bool:
        return relative.rstrip("/") in self.code_text or Path(relative).name in self.code_text


def survey(root: Path) -> Layout:
    layout = Layout(root)
    texts, large = [], []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS and not os.path.islink(os.path.join(folder, d)))
        base = Path(folder).relative_to(root)
        for name in sorted(files):
            relative = (base / name).as_posix()
            path = root / relative
            if len(layout.python_files) + len(layout.notebooks) > MAX_FILES or path.is_symlink():
                continue
            if name.endswith(".py"):
                layout.python_files.append(relative)
                texts.append(path.read_text(encoding="utf-8", errors="replace"))
            elif name.endswith(".ipynb"):
                layout.notebooks.append(relative)
            elif name == "Dockerfile" or name.endswith(".Dockerfile") or name.startswith("Dockerfile."):
                layout.dockerfiles.append(relative)
            elif name.endswith(WEIGHT_SUFFIXES) and path.stat().st_size >= LARGE:
                large.append(relative)
    layout.code_text = "\n".join(texts)
    src = root / "src"
    layout.src_layout = src.is_dir() and any((p / "__init__.py").is_file() for p in src.iterdir() if p.is_dir())
    bases = [root, src] if layout.src_layout else [root]
    layout.packages = sorted(
        {
            p.name
            for base in bases
            for p in base.iterdir()
            if p.is_dir() and (p / "__init__.py").is_file() and p.name.isidentifier() and p.name != "tests"
        }
    )
    gitignore = root / ".gitignore"
    if gitignore.is_file():
        layout.gitignore = [
            line.strip()
            for line in gitignore.read_text(encoding="utf-8", errors="replace").splitlines()
            if line.strip() and not line.startswith("#")
        ]
    layout.left_out = _left_out(layout, large)
    return layout


def _left_out(layout: Layout, large: list[str]) -> list[str]:
    patterns = [f"{name}/" for name in OUTPUT_DIRS if (layout.root / name).is_dir()]
    patterns += [
        f"{name}/"
        for name in DATA_DIRS
        if (layout.root / name).is_dir() and not _is_package(layout.root / name) and not layout.names_in_code(name + "/")
    ]
    return patterns + [
        relative for relative in large if not layout.names_in_code(relative) and not any(relative.startswith(p) for p in patterns)
    ]


def _is_package(folder: Path) -> bool:
    return (folder / "__init__.py").is_file() or any(folder.glob("*.py"))


# ----- the entry ---------------------------------------------------------------------
@dataclass(frozen=True)
class Entry:
    command: str  # "" when nothing was found
    how: str  # where it was found


def find_entry(layout: Layout, sources: Sources, given: str | None, installed: bool = False) -> Entry:
    """``installed``: the project's own wheel goes into the image, so its console scripts are on PATH there."""
    if given:
        return Entry(given, "--entry")
    for name, target in sources.scripts.items():
        if installed and re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", name):
            return Entry(name, f"the console script {name!r} ({target}), installed in the image with the project's own wheel")
        command = _console_command(layout, target)
        if command:
            return Entry(
                command,
                f"the console script {name!r} ({target}), run from the source tree because the project is not installed in the image",
            )
    found = []
    for source in sources.found:
        found += [(command, f"{source.file} [scripts]") for command in source.commands]
    for name in ("Makefile", "makefile", "GNUmakefile", "justfile", *sorted(p.name for p in layout.root.glob("README*"))):
        path = layout.root / name
        if path.is_file():
            found += [(match, name) for match in _COMMAND.findall(path.read_text(encoding="utf-8", errors="replace"))]
    runnable = [(command, origin) for command, origin in ((_normal(layout, c), o) for c, o in found) if command]
    training = [item for item in runnable if "train" in item[0]]
    if training or runnable:
        command, origin = (training or runnable)[0]
        return Entry(command, f"what {origin} runs")
    return Entry("", "")


def _console_command(layout: Layout, target: str) -> str:
    module, _, function = target.partition(":")
    path = _module_file(layout, module)
    if path is None or not function.replace(".", "").replace("_", "").isalnum():
        return ""
    prefix = "PYTHONPATH=src " if path.is_relative_to(layout.root / "src") and layout.src_layout else ""
    text = path.read_text(encoding="utf-8", errors="replace")
    if re.search(r"""__name__\s*==\s*["']__main__["']""", text):
        return f"{prefix}python -m {module}"
    top = module.split(".")[0]
    if module == top and _module_file(layout, f"{top}.__main__") is not None:
        return f"{prefix}python -m {top}"
    code = f"import sys; from {module} import {function.split('.')[0]}; sys.exit({function}())"
    return f"{prefix}python -c {shlex.quote(code)}"


def _module_file(layout: Layout, module: str) -> Path | None:
    for base in [layout.root, layout.root / "src"]:
        candidate = base.joinpath(*module.split("."))
        for path in (candidate.with_suffix(".py"), candidate / "__init__.py"):
            if path.is_file():
                return path
    return None


def _normal(layout: Layout, command: str) -> str:
    """``python x.py`` / ``python -m m`` as it runs from the project root, or "" when what it names is not here."""
    words = command.split()
    if len(words) < 2:
        return ""
    if words[1] == "-m":
        return f"python -m {words[2]}" if len(words) > 2 and _module_file(layout, words[2]) is not None else ""
    script = words[1].removeprefix("./")
    path = layout.root / script
    if not path.is_file() or not path.resolve().is_relative_to(layout.root.resolve()):
        return ""
    parts = Path(script).with_suffix("").parts
    package_depth = 0
    for depth in range(len(parts) - 1, 0, -1):
        if (layout.root.joinpath(*parts[:depth]) / "__init__.py").is_file():
            package_depth = depth
        else:
            break
    if package_depth:  # a script inside a package runs as a module: its relative imports then work
        return f"python -m {'.'.join(parts)}"
    return f"python {shlex.quote(script)}"
