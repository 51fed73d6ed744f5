"""Shell scripts: parameters read from .env.local, guarded, loud when unset; proofs by running bash.

A rewritten script gets one block after its leading comments (``#SBATCH`` lines stay
first): the project root from the script's own location, each parameter from the
environment or else from ``.env.local``, and ``${NAME:?…}`` so that a missing one stops
the script with its name. Only the machine-specific part of a path is replaced, in the
quoting of its place (``"${DATA_ROOT}"/x`` bare, ``'"${DATA_ROOT}"'`` inside single quotes),
the rest kept byte for byte. The proof: ``bash -n`` on the new script, then the block run
from a copy of the project holding nothing but .env.local, and every changed word
printed by the shell before and after the rewrite.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import PurePosixPath

SHELL_SUFFIXES = (".sh", ".bash", ".sbatch", ".slurm", ".pbs", ".job", ".ksh")
BLOCK_START = "# --- path parameters (written by `bundler paths --fix`) ---"
BLOCK_END = "# --- end of path parameters ---"
ROOT_VARIABLE = "_bundle_root"
CODE, SINGLE, DOUBLE, COMMENT, HEREDOC, HEREDOC_LITERAL = range(6)
_SEPARATORS = frozenset(" \t\n;&|<>()")


def interpreter(relative: str, text: str) -> str | None:
    """The shell that runs ``text`` ("bash" or "sh"), or None when it is not a POSIX-family script."""
    first = text.split("\n", 1)[0]
    if first.startswith("#!"):
        if re.search(r"\b(?:bash|ksh)\b", first):
            return "bash"
        if re.search(r"(?:/|env\s+)sh\b|\bdash\b", first):
            return "sh"
        return None
    return "bash" if relative.endswith(SHELL_SUFFIXES) else None


def contexts(text: str) -> bytearray:
    """The quoting context of every character: code, single or double quotes, comment, heredoc body."""
    kinds = bytearray(len(text))
    stack, pending, index, length = [CODE], [], 0, len(text)
    while index < length:
        char, mode = text[index], stack[-1]
        kinds[index] = mode
        if mode == SINGLE:
            if char == "'":
                stack.pop()
                kinds[index] = CODE
        elif mode == DOUBLE:
            if char == "\\":
                kinds[index + 1 : index + 2] = bytes([DOUBLE])
                index += 1
            elif char == '"':
                stack.pop()
                kinds[index] = CODE
            elif text.startswith("$(", index):
                stack.append(CODE)
        elif char == "\\":
            kinds[index + 1 : index + 2] = bytes([CODE])
            index += 1
        elif char == "'":
            stack.append(SINGLE)  # the quote itself is syntax: CODE
        elif char == '"':
            stack.append(DOUBLE)
        elif char == "#" and (index == 0 or text[index - 1] in " \t\n;&|(`"):
            end = text.find("\n", index)
            end = length if end == -1 else end
            kinds[index:end] = bytes([COMMENT]) * (end - index)
            index = end - 1
        elif char == ")" and len(stack) > 1:
            stack.pop()
        elif text.startswith("<<", index) and not text.startswith("<<<", index):
            match = re.compile(r"<<(-?)\s*(['\"]?)(\w+)\2").match(text, index)
            if match:
                pending.append((match.group(3), bool(match.group(2)), bool(match.group(1))))
                index = match.end() - 1
        elif char == "\n" and pending:
            index = _heredoc_bodies(text, index + 1, pending, kinds) - 1
            pending = []
        index += 1
    return kinds


def _heredoc_bodies(text: str, start: int, pending, kinds: bytearray) -> int:
    for delimiter, literal, strip_tabs in pending:
        end = re.compile(r"^" + ("\t*" if strip_tabs else "") + re.escape(delimiter) + r"$", re.M).search(text, start)
        stop = end.start() if end else len(text)
        kinds[start:stop] = bytes([HEREDOC_LITERAL if literal else HEREDOC]) * (stop - start)
        start = end.end() + 1 if end else len(text)
    return start


def word_span(text: str, kinds: bytearray, start: int, end: int) -> tuple[int, int]:
    """The shell word (or heredoc line) holding ``text[start:end]``."""
    if kinds[start] in (HEREDOC, HEREDOC_LITERAL):
        return text.rfind("\n", 0, start) + 1, (text.find("\n", end) if "\n" in text[end:] else len(text))
    left, right = start, end
    while left > 0 and not (kinds[left - 1] == CODE and text[left - 1] in _SEPARATORS and (left < 2 or text[left - 2] != "\\")):
        left -= 1
    while right < len(text) and not (kinds[right] == CODE and text[right] in _SEPARATORS and text[right - 1] != "\\"):
        right += 1
    return left, right


def _expansion(name: str) -> str:
    return "${" + name + "}"


def reference(name: str, context: int) -> str | None:
    """How a parameter is read in a quoting context (None: it cannot be read there)."""
    if context == CODE:
        return '"${' + name + '}"'
    if context in (DOUBLE, HEREDOC):
        return _expansion(name)
    if context == SINGLE:
        return "'\"${" + name + "}\"'"
    return None


def rewrite_shell(text: str, findings: list) -> tuple[str, list[tuple], list[dict]]:
    """(new body, edits as (start, end, new text, finding, in a comment) on ``text``, findings left as they are with the reason)."""
    from bundler.portability.python_rewrite import line_offsets, manual

    kinds, offsets = contexts(text), line_offsets(text)
    edits, problems = [], []
    for finding in findings:
        start = offsets[finding.line - 1] + finding.column - 1
        end = start + len(finding.text)
        if text[start:end] != finding.text:
            problems.append(manual(finding, "text moved while rewriting"))
            continue
        context = kinds[start]
        if any(kinds[i] != context for i in range(start, end)):
            problems.append(manual(finding, "spans several quoting contexts"))
            continue
        if context == COMMENT:
            edits.append((start, end, finding.replacement, finding, True))
            continue
        name = ROOT_VARIABLE if finding.project_relative is not None else finding.parameter
        ref = reference(name, context) if name and finding.prefix_length else None
        left, right = word_span(text, kinds, start, end)
        if ref is None:
            problems.append(manual(finding, "inside a heredoc that is not expanded"))
        elif "$(" in text[left:right] or "`" in text[left:right]:
            problems.append(manual(finding, "in a word that runs a command: change it by hand"))
        elif context == SINGLE:  # close the quotes around the reference, dropping a pair left empty
            stop = start + finding.prefix_length
            opens = text[start - 1] == "'" and kinds[start - 1] == CODE
            closes = stop < len(text) and text[stop] == "'" and kinds[stop] == CODE
            new_ref = ("" if opens else "'") + _expansion(name).join('""') + ("" if closes else "'")
            edits.append((start - opens, stop + closes, new_ref, finding, False))
        else:
            edits.append((start, start + finding.prefix_length, ref, finding, False))
    new = text
    for start, end, replacement, *_ in sorted(edits, key=lambda e: e[0], reverse=True):
        new = new[:start] + replacement + new[end:]
    return new, edits, problems


def block(names: list[str], depth: int, newline: str, slurm: bool) -> str:
    """The lines a rewritten script reads its parameters with (POSIX sh, bash-compatible)."""
    up = "/.." * depth
    lines = [
        BLOCK_START,
        "# The project root is found from this script's own place (or BUNDLE_PROJECT_ROOT); each parameter",
        "# from the environment, else from .env.local at the project root; an unset one stops the script.",
    ]
    if slurm:
        lines.append("# Under sbatch the script runs from a copy: export BUNDLE_PROJECT_ROOT=/path/to/the/project first.")
    lines += [
        f'{ROOT_VARIABLE}=${{BUNDLE_PROJECT_ROOT:-$(CDPATH= cd -- "$(dirname -- "${{BASH_SOURCE:-$0}}"){up}" && pwd)}}',
        "_bundle_param() {",
        f'  [ -f "${ROOT_VARIABLE}/.env.local" ] || return 0',
        '  _bundle_v=$(sed -n "s/^[[:space:]]*\\(export[[:space:]][[:space:]]*\\)\\{0,1\\}$1=//p" \\',
        f'    "${ROOT_VARIABLE}/.env.local" | tail -n 1)',
        "  case $_bundle_v in \\\"*\\\"|\\'*\\') _bundle_v=${_bundle_v#?}; _bundle_v=${_bundle_v%?} ;; esac",
        "  case $_bundle_v in",
        "    '~'|'~/'*) _bundle_v=$HOME${_bundle_v#\\~} ;;",
        "    '${HOME}'*) _bundle_v=$HOME${_bundle_v#\\$\\{HOME\\}} ;;",
        "    '$HOME'*) _bundle_v=$HOME${_bundle_v#\\$HOME} ;;",
        "  esac",
        "  printf '%s' \"$_bundle_v\"",
        "}",
    ]
    for name in sorted(names):
        lines.append(f': "${{{name}:=$(_bundle_param {name})}}"')
        lines.append(f': "${{{name}:?path parameter {name} is not set: export it or write {name}=... in .env.local}}"')
    lines.append(BLOCK_END)
    return newline.join(lines) + newline


def with_block(text: str, names: list[str], relative: str) -> tuple[str, int, int]:
    """``text`` with the parameter block (replacing an earlier one); (new text, line it starts on, lines it adds)."""
    newline = "\r\n" if "\r\n" in text else "\n"
    lines = text.splitlines(keepends=True)
    old = re.search(r"^" + re.escape(BLOCK_START) + r".*?^" + re.escape(BLOCK_END) + r"\r?\n", text, re.M | re.S)
    if old:
        names = sorted(set(names) | set(re.findall(r'^: "\$\{(\w+):=', old.group(0), re.M)))
        depth = len(PurePosixPath(relative).parts) - 1
        new_block = block(names, depth, newline, "#SBATCH" in text)
        start_line = text.count("\n", 0, old.start()) + 1
        return text[: old.start()] + new_block + text[old.end() :], start_line, new_block.count("\n") - old.group(0).count("\n")
    after = 0
    while after < len(lines) and (lines[after].startswith("#") or not lines[after].strip()):
        after += 1
    depth = len(PurePosixPath(relative).parts) - 1
    new_block = block(names, depth, newline, "#SBATCH" in text)
    return "".join(lines[:after]) + new_block + "".join(lines[after:]), after + 1, new_block.count("\n")


def shell_problem(shell: str, relative: str, original: str, new: str, edits, env_local: str) -> str | None:
    """Why the rewritten script does not mean the original (None: proven the same by running it)."""
    if shutil.which(shell) is None:
        return f"{shell} is not installed here, so the rewrite cannot be proven: not modified"
    for label, text in (("did not parse before the rewrite", original), ("the rewrite would not parse", new)):
        checked = subprocess.run([shell, "-n"], input=text, capture_output=True, text=True, check=False)
        if checked.returncode != 0:
            return f"{label} ({shell} -n: {checked.stderr.strip().splitlines()[-1] if checked.stderr.strip() else 'error'}): not modified"
    with tempfile.TemporaryDirectory(prefix="bundler-proof-") as scratch:
        project, home, elsewhere = (os.path.realpath(os.path.join(scratch, part)) for part in ("project", "home", "cwd"))
        for folder in (project, home, elsewhere):
            os.makedirs(folder)
        with open(os.path.join(project, ".env.local"), "w", encoding="utf-8") as handle:
            handle.write(env_local)
        words_before, words_after = _words(original, edits, project)
        script = os.path.join(project, relative)
        os.makedirs(os.path.dirname(script), exist_ok=True)
        header = new[: new.index(BLOCK_END) + len(BLOCK_END)] + "\n"
        with open(script, "w", encoding="utf-8") as handle:
            handle.write(header + f'printf "%s\\n" "${ROOT_VARIABLE}"\n' + "".join(_printing(w) for w in words_after))
        environment = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": home}
        after = subprocess.run([shell, script], cwd=elsewhere, env=environment, capture_output=True, text=True, check=False, timeout=30)
        before = subprocess.run(
            [shell, "-c", "".join(_printing(w) for w in words_before)],
            cwd=elsewhere,
            env=environment,
            capture_output=True,
            text=True,
            check=False,
        )
    lines = after.stdout.split("\n")
    if after.returncode != 0 or not lines or lines[0] != project:
        return f"run with only .env.local present, the script's parameters did not resolve ({after.stderr.strip()[:200]}): not modified"
    if "\n".join(lines[1:]) != before.stdout:
        return "the shell expands a changed word differently after the rewrite: not modified"
    return None


def _words(original: str, edits, project: str) -> tuple[list[str], list[str]]:
    """The changed words before (the project's prefix standing for the project root) and after the rewrite."""
    kinds = contexts(original)
    before, after = [], []
    for start, end, replacement, finding, _ in sorted(edits, key=lambda e: e[0]):
        left, right = word_span(original, kinds, start, end)
        prefix = project if finding.project_relative is not None else original[start:end]
        heredoc = kinds[start] == HEREDOC
        before.append(("H" if heredoc else "W") + original[left:start] + prefix + original[end:right])
        after.append(("H" if heredoc else "W") + original[left:start] + replacement + original[end:right])
    return before, after


def _printing(word: str) -> str:
    kind, text = word[0], word[1:]
    if kind == "H":
        return f"( cat <<BUNDLE_PROOF_EOF\n{text}\nBUNDLE_PROOF_EOF\n) 2>/dev/null || echo '<failed>'\n"
    return f"( printf '%s\\n' {text} ) 2>/dev/null || echo '<failed>'\n"
