"""The repository's own promises: CI runs README's test command, the layout ships."""

import re

from tests.conftest import REPO


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


def test_ci_runs_the_readme_test_command_verbatim():
    ci = (REPO / ".ci" / "run").read_text().splitlines()
    assert readme_commands()[1] in ci


def test_shipped_folders_exist():
    for name in ("template", "images", "diagnostics", "bench", "tests"):
        assert (REPO / name).is_dir(), name
