"""The repository's own promises: CI runs README's test command, the layout ships, the code
keeps its shape (lint, format, a Python 3.10 floor, one-way floors, no import circle)."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

# bundler's floors, top to bottom: a module imports only from its own package or a lower floor.
FLOORS = (
    ("bundler.__main__",),
    ("bundler.launch",),
    ("bundler.cli",),
    ("bundler.adopt",),
    ("bundler.portability",),
    ("bundler.diagnose", "bundler.jobs"),
    ("bundler.image",),
    ("bundler.lock", "bundler.scaffold"),
    ("bundler.evidence", "bundler.target", "bundler.engine", "bundler.pipsettings"),
    ("bundler.fsutil", "bundler.resources", "bundler.machinepaths"),
    ("bundler.errors", "bundler.tomlcompat", "bundler.inimage", "bundler"),
    ("bundler.contracts",),
)
ENGINE_SDK = ("docker", "requests", "urllib3")  # the Docker SDK and its transport: tests use them, bundler does not


def readme_commands() -> list[str]:
    text = (REPO / "README.md").read_text()
    quick_start = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```\n(.+?)\n```", quick_start, flags=re.S)


def test_readme_gives_exactly_two_setup_commands():
    commands = readme_commands()
    assert len(commands) == 2
    assert all("\n" not in command for command in commands)
    assert "bundler new" in commands[0]
    assert "pytest" in commands[1]


@pytest.mark.slow
def test_readme_first_command_works_as_written_in_a_fresh_clone(tmp_path):
    """A newcomer's first command, verbatim, in a fresh clone with a fresh virtual environment."""
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True, timeout=300)
    env = {key: value for key, value in os.environ.items() if key not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env["TMPDIR"] = str(tmp_path)  # where `mktemp -d` puts the example
    env["PIP_RETRIES"] = "0"  # PyTorch's index is unreachable on CI: fail over to the other sources at once
    completed = subprocess.run(["bash", "-c", readme_commands()[0]], cwd=clone, env=env, capture_output=True, text=True, timeout=1800)
    output = completed.stdout + completed.stderr
    assert completed.returncode == 0, output[-4000:]
    assert "Accepted delivery." in output
    left = subprocess.run(["git", "status", "--porcelain"], cwd=clone, capture_output=True, text=True, check=True).stdout
    assert left == "", f"the quick start left files in the clone: {left}"


def test_ci_runs_the_readme_test_command_verbatim():
    ci = (REPO / ".ci" / "run").read_text().splitlines()
    assert readme_commands()[1] in ci


def test_shipped_folders_exist():
    for name in ("template", "images", "diagnostics", "bench", "tests", "docs"):
        assert (REPO / name).is_dir(), name


TOOLS = {  # tools of the test extras, run through this interpreter (a venv's scripts folder may not hold them)
    "ruff": ["-m", "ruff"],
    "vermin": ["-c", "import sys; from vermin.main import main; sys.exit(main())"],
    "mypy": ["-m", "mypy"],
    "vulture": ["-m", "vulture"],
}


def run_tool(tool: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *TOOLS[tool], *args], cwd=REPO, capture_output=True, text=True, timeout=300)


def test_ruff_lint_is_clean():
    completed = run_tool("ruff", "check", ".")
    assert completed.returncode == 0, completed.stdout[-3000:]


def test_ruff_format_is_applied():
    completed = run_tool("ruff", "format", "--check", ".")
    assert completed.returncode == 0, completed.stdout[-3000:]


def test_bundler_and_the_diagnostics_run_on_python_3_10():
    # no 3.10 interpreter here: a static check of the minimum version every construct needs
    completed = run_tool("vermin", "-t=3.10-", "--no-tips", "--violations", "bundler", "diagnostics")
    assert completed.returncode == 0, completed.stdout[-3000:]


def test_the_type_checker_is_clean():
    """mypy on bundler/ and diagnostics/, configured in pyproject.toml (its cache in .mypy_cache keeps a rerun short)."""
    completed = run_tool("mypy")
    assert completed.returncode == 0, completed.stdout[-6000:] + completed.stderr[-2000:]


def test_no_dead_code():
    """vulture on bundler/ and diagnostics/ (tests/ not scanned: code only tests call is dead); its allow-list is
    pyproject.toml's [tool.vulture] ignore_names, each with the reason vulture cannot see the use."""
    completed = run_tool("vulture")
    assert completed.returncode == 0, completed.stdout[-6000:] + completed.stderr[-2000:]


def test_every_name_the_dead_code_finder_is_told_to_ignore_is_still_one_it_would_report():
    """The allow-list stays reviewed: an entry whose code is gone (or now visibly used) is removed."""
    import vulture

    from bundler.tomlcompat import tomllib

    settings = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["vulture"]
    finder = vulture.Vulture(ignore_decorators=settings["ignore_decorators"])
    finder.scavenge([str(REPO / path) for path in settings["paths"]], exclude=[str(REPO / path) for path in settings.get("exclude", [])])
    reported = {item.name for item in finder.get_unused_code()}
    assert [name for name in settings["ignore_names"] if name not in reported] == []


def module_name(path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    if parts[0] == "diagnostics":  # the diagnostics run with their own folder on sys.path: bdiag.*, run
        parts = parts[1:]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path, prefixes: tuple[str, ...] = ("bundler",)) -> set[str]:
    """Every module of ``prefixes`` that ``path`` imports, at the top or inside a function
    (``from a import b`` is an import of the module a.b when b is a module, else of a)."""
    found = set()
    package = module_name(path).rsplit(".", 1)[0] if path.name != "__init__.py" else module_name(path)
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:  # relative: from .x import y
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                module = f"{base}.{module}" if module else base
            if module.startswith(prefixes):
                submodules = {f"{module}.{alias.name}" for alias in node.names if is_module(f"{module}.{alias.name}")}
                found.update(submodules if len(submodules) == len(node.names) else {module} | submodules)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.startswith(prefixes))
    return found


def is_module(name: str) -> bool:
    parts = name.split(".")
    folder = REPO / ("diagnostics" if parts[0] in ("bdiag", "run") else "") / Path(*parts)
    return folder.with_suffix(".py").is_file() or (folder / "__init__.py").is_file()


def bundler_imports(path) -> set[str]:
    return imports_of(path)


def floor_of(module: str) -> tuple[int, str]:
    """(floor, group) of a module: the longest matching prefix wins."""
    best = None
    for number, group in enumerate(FLOORS):
        for prefix in group:
            if (module == prefix or module.startswith(prefix + ".")) and (best is None or len(prefix) > len(best[1])):
                best = (number, prefix)
    return best


def sources():
    return sorted((REPO / "bundler").rglob("*.py"))


def diagnostics_sources():
    return sorted((REPO / "diagnostics").rglob("*.py"))


@pytest.mark.parametrize("path", sources(), ids=lambda p: str(p.relative_to(REPO)))
def test_imports_never_climb_a_floor(path):
    here, own = floor_of(module_name(path))
    for imported in bundler_imports(path):
        located = floor_of(imported)
        if located is None:
            continue
        there, group = located
        assert there > here or group == own or (there == here and group == "bundler"), (
            f"{module_name(path)} (floor {here}) imports {imported} (floor {there}): a floor above or beside it"
        )


def top_level_imports(path) -> set[str]:
    """The top-level package of every import in ``path``, at the top or inside a function."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
        elif isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
    return found


def test_nothing_of_bundler_imports_the_docker_sdk():
    """The engine speaks the Engine API through engine/wire.py (standard library): no SDK at start-up."""
    users = {
        str(path.relative_to(REPO)): sorted(top_level_imports(path) & set(ENGINE_SDK))
        for path in sorted((REPO / "bundler").rglob("*.py")) + sorted((REPO / "diagnostics").rglob("*.py"))
    }
    assert {path: names for path, names in users.items() if names} == {}
    assert "http" in top_level_imports(REPO / "bundler" / "engine" / "wire.py")  # the check looks at real imports


def test_the_programs_run_inside_images_use_the_standard_library_torch_and_the_contracts_alone():
    stdlib = set(sys.stdlib_module_names) | {"__future__", "torch", "bundler"}
    for path in sorted((REPO / "bundler" / "inimage").glob("*.py")):
        assert top_level_imports(path) <= stdlib, f"{path.name} imports {top_level_imports(path) - stdlib}"
        assert all(name.startswith("bundler.contracts") for name in imports_of(path)), f"{path.name}: only the contracts ship with it"


def test_the_contracts_import_nothing_but_the_standard_library_and_each_other():
    for path in sorted((REPO / "bundler" / "contracts").glob("*.py")):
        for imported in imports_of(path):
            assert imported.startswith("bundler.contracts"), f"{path.name} imports {imported}"
        third_party = {"packaging", "docker", "tomlkit", "typer", "rich", "yaml"}
        for node in ast.walk(ast.parse(path.read_text())):
            names = (
                [alias.name for alias in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            assert not {name.split(".")[0] for name in names} & third_party, f"{path.name} imports {names}"


def import_graph() -> dict[str, set[str]]:
    """module -> the modules it imports (bundler/ and diagnostics/, function-level imports included)."""
    files = {module_name(path): path for path in sources() + diagnostics_sources()}
    graph = {}
    for module, path in files.items():
        prefixes = ("bundler",) if module.startswith("bundler") else ("bdiag", "run")
        graph[module] = {name for name in imports_of(path, prefixes) if name in files and name != module}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in sorted(graph[node]):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_circle_anywhere_in_bundler_or_the_diagnostics():
    assert cycles(import_graph()) == []


def test_the_circle_finder_finds_a_circle_through_a_function_level_import():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_project_speaks_of_itself_alone():
    tracked = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout.split()
    outside = "../" + "shared"  # spelled in two parts so that this test does not find itself
    offenders = [name for name in tracked if name.endswith((".py", ".md", ".toml", ".sh")) and outside in (REPO / name).read_text()]
    assert offenders == []
