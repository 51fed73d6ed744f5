"""The rewrites of text and notebooks: placeholders where a reader expands them, code cells as Python.

Text: a comment gets the placeholder (``${DATA_ROOT}/x``); a value in a YAML file that
OmegaConf loads gets OmegaConf's environment resolver (``${oc.env:DATA_ROOT}/x``); a
requirements file gets ``${DATA_ROOT}``, which pip expands. A value read by code bundler
cannot see (plain YAML, JSON, TOML, …) is left as it is and reported: a placeholder would
reach that code unexpanded. Notebooks: code cells are rewritten as Python (IPython magic
lines left alone), with one import per notebook; metadata is scrubbed. A cell whose first
line is a cell magic keeps it first; where the magic makes the body another language
(``%%writefile``, ``%%bash``, ``%%html``…) the cell is left as is and reported. Outputs are
a record of a run: left as they are, their findings reported (fix.py).
"""

from __future__ import annotations

import json
import re

from bundler.portability.equivalence import python_problem
from bundler.portability.python_rewrite import NOTEBOOK_IMPORT, line_offsets, manual, rewrite_python

_INFORMATION = ("docs", "remote", "portable")


def is_comment(line: str, column: int) -> bool:
    """Is the character at ``column`` (0-based) in a ``#`` comment (a ``#`` at a line's or word's start, outside quotes)?"""
    quote = None
    for index, char in enumerate(line[:column]):
        if quote:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (index == 0 or line[index - 1] in " \t"):
            return True
    return False


def rewrite_text(text: str, findings: list, value_style: str | None) -> tuple[str, int, list[dict]]:
    """Comments get the placeholder; values get ``value_style`` ("omegaconf", "pip") or are left and reported."""
    offsets = line_offsets(text)
    edits, problems = [], []
    for finding in findings:
        start = offsets[finding.line - 1] + finding.column - 1
        end = start + len(finding.text)
        line_start = offsets[finding.line - 1]
        if text[start:end] != finding.text:
            problems.append(manual(finding, "text moved while rewriting"))
        elif is_comment(text[line_start:start], start - line_start):
            edits.append((start, end, finding.replacement))
        elif value_style is None or finding.shape == "home-lookup":
            problems.append(manual(finding, "a value read by code bundler cannot see: a ${NAME} placeholder would reach it unexpanded"))
        elif finding.project_relative is not None:
            problems.append(manual(finding, "a path inside the project: write it relative to where it is read from"))
        else:
            name = f"${{oc.env:{finding.parameter}}}" if value_style == "omegaconf" else f"${{{finding.parameter}}}"
            edits.append((start, start + finding.prefix_length, name))
    for start, end, replacement in sorted(edits, reverse=True):
        text = text[:start] + replacement + text[end:]
    return text, len(edits), problems


def textual_problem(original: str, new: str, values: dict[str, str]) -> str | None:
    """The new text with every ``${NAME}`` (or ``${oc.env:NAME}``) set to its original value must be the original."""
    expanded = re.sub(r"\$\{(?:oc\.env:)?([A-Za-z_][A-Za-z0-9_]*)\}", lambda m: values.get(m.group(1), m.group(0)), new)
    if expanded == original:
        return None
    return "the rewrite, expanded with the original values, is not the original text: not modified"


# --- notebooks ----------------------------------------------------------------------------

_MAGIC = re.compile(r"^[ \t]*[%!?]")


def rewrite_notebook(text: str, scanner, relative: str, prove) -> tuple[str, int, list[dict], bool]:
    """(new text, paths fixed, left as they are, whether the helper module is needed beside it).

    ``prove(original_cell, new_cell, findings, edits)`` returns why a cell's rewrite is refused, or None.
    """
    document = json.loads(text)
    fixed, problems, needs_helper = 0, [], False
    cells = [cell for cell in document.get("cells", []) if isinstance(cell, dict)]
    found_in = {id(cell): _cell_findings(cell, scanner, relative) for cell in cells if cell.get("cell_type") == "code"}
    # Every cell is proven knowing every project root the notebook names, as a Python file is:
    # a cell's path under the project's own folder is the project's, whatever its tail.
    everything = [f for found in found_in.values() for f in found]

    def known(original: str, new: str, _cell_findings, edits) -> str | None:
        return prove(original, new, everything, edits)

    for cell in cells:
        source, joined = cell.get("source", ""), _joined(cell)
        if cell.get("cell_type") == "code":
            found = found_in[id(cell)]
            problems += [manual(f, f.note) for f in found if f.note]
            new, count, left = _rewrite_cell(joined, [f for f in found if not f.note], known)
            if new != joined:
                cell["source"] = new.splitlines(keepends=True) if isinstance(source, list) else new
                needs_helper = needs_helper or "param_path(" in new or "project_path(" in new
            fixed += count
            problems += left
        if "metadata" in cell:  # outputs are a record of the run: never rewritten
            cell["metadata"], count = _scrub(cell["metadata"], scanner, relative)
            fixed += count
    if "metadata" in document:
        document["metadata"], count = _scrub(document["metadata"], scanner, relative)
        fixed += count
    if needs_helper and not any("_bundle_paths import" in "".join(c.get("source", "")) for c in cells):
        _insert_import(next(c for c in cells if c.get("cell_type") == "code" and cell_magic(_joined(c)) in (None, *PYTHON_CELL_MAGICS)))
    new_text = json.dumps(document, indent=_json_indent(text), ensure_ascii=False) + ("\n" if text.endswith("\n") else "")
    return (new_text.replace("\n", "\r\n") if "\r\n" in text else new_text), fixed, problems, needs_helper


# Cell magics whose body stays Python: the cell is rewritten as Python below its first line.
PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun", "debug"})
_CELL_MAGIC = re.compile(r"[ \t]*%%(\w+)")


def cell_magic(source: str) -> str | None:
    """The cell magic a code cell starts with (``writefile`` for ``%%writefile x.sh``), or None."""
    match = _CELL_MAGIC.match(source)
    return match.group(1) if match else None


def _cell_findings(cell: dict, scanner, relative: str) -> list:
    found = scanner.findings_in(relative + "#cell.py", _joined(cell).encode("utf-8"), "code")
    return [f for f in found if f.category not in _INFORMATION]


def _joined(cell: dict) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else str(source)


def _insert_import(cell: dict) -> None:
    """The helper's import at the cell's top, or right below its cell magic, which IPython reads only on line 1."""
    source = cell.get("source", "")
    lines = source if isinstance(source, list) else str(source).splitlines(keepends=True)
    at = 1 if lines and cell_magic(lines[0]) else 0
    if at and not lines[0].endswith("\n"):
        lines = [lines[0] + "\n", *lines[1:]]
    lines = [*lines[:at], NOTEBOOK_IMPORT, *lines[at:]]
    cell["source"] = lines if isinstance(source, list) else "".join(lines)


def _rewrite_cell(source: str, findings: list, prove) -> tuple[str, int, list[dict]]:
    lines = source.split("\n")
    magic = {index for index, line in enumerate(lines) if _MAGIC.match(line)}
    language = cell_magic(source)
    if language is not None and language not in PYTHON_CELL_MAGICS:
        why = f"in a %%{language} cell: IPython runs its body as another language than Python, so --fix leaves it as is"
        return source, 0, [manual(f, why) for f in findings]
    keep = [f for f in findings if f.line - 1 not in magic]
    left = [manual(f, "in an IPython magic line") for f in findings if f.line - 1 in magic]
    masked = "\n".join(re.sub(r"[%!?].*", "pass", line, count=1) if i in magic else line for i, line in enumerate(lines))
    result = rewrite_python(masked, keep, import_block="")
    left += result.manual
    if result.source == masked:
        return source, 0, left
    problem = prove(masked, result.source, keep, result.edits)
    if problem is not None:
        return source, 0, left + [manual(f, problem) for f in keep]
    new_lines = result.source.split("\n")
    for index in magic:
        new_lines[index] = lines[index]
    return "\n".join(new_lines), result.fixed, left


def _scrub(value, scanner, relative: str):
    """Replace every machine-specific path in the strings of ``value`` by its placeholder."""
    if isinstance(value, str):
        found = scanner.findings_in(relative, value.encode("utf-8"), "config", decoded=True)
        found = [f for f in found if f.category not in _INFORMATION]
        offsets = line_offsets(value)
        for finding in sorted(found, key=lambda f: (f.line, f.column), reverse=True):
            start = offsets[finding.line - 1] + finding.column - 1
            value = value[:start] + finding.replacement + value[start + len(finding.text) :]
        return value, len(found)
    if isinstance(value, list):
        pairs = [_scrub(item, scanner, relative) for item in value]
        return [p[0] for p in pairs], sum(p[1] for p in pairs)
    if isinstance(value, dict):
        scrubbed = {key: _scrub(item, scanner, relative) for key, item in value.items()}
        return {key: p[0] for key, p in scrubbed.items()}, sum(p[1] for p in scrubbed.values())
    return value, 0


def _json_indent(text: str) -> int:
    match = re.search(r"\n( +)\S", text)
    return len(match.group(1)) if match else 1


# --- the proof of a whole notebook as written -----------------------------------------------


def json_unescaped(text: str) -> str:
    """A path as a notebook's JSON spells it (``C:\\\\Users``), as its cell's Python reads it (``C:\\Users``)."""
    try:
        return json.loads(f'"{text}"')
    except ValueError:
        return text


def notebook_problem(old: str, new: str, values: dict[str, str], prefixes: list[str]) -> str | None:
    """Why notebook ``new`` does not mean ``old``: each changed code cell proven as Python, its cell
    magic still first, outputs as they were. ``prefixes``: project roots as the cells' Python spells them."""

    def code(text: str) -> list[dict]:
        return [c for c in json.loads(text).get("cells", []) if isinstance(c, dict) and c.get("cell_type") == "code"]

    def masked(text: str) -> str:
        lines = (re.sub(r"^(\s*)[%!?].*", r"\1pass", line) for line in text.split("\n") if "_bundle_paths import" not in line)
        return "\n".join(lines)

    before, after = code(old), code(new)
    if len(before) != len(after):
        return "its code cells were added or removed: not modified"
    for index, (a_cell, b_cell) in enumerate(zip(before, after, strict=True)):
        if a_cell.get("outputs") != b_cell.get("outputs"):
            return f"code cell {index}: its outputs (a record of the run) were rewritten: not modified"
        a, b = _joined(a_cell), _joined(b_cell)
        if a == b:
            continue
        magic = cell_magic(a)
        if magic is not None and a.split("\n", 1)[0] != b.split("\n", 1)[0]:
            return f"code cell {index}: its %%{magic} line is no longer the cell's first: not modified"
        if magic is not None and magic not in PYTHON_CELL_MAGICS:
            return f"code cell {index}: a %%{magic} cell, whose body is not Python, was rewritten: not modified"
        if problem := python_problem(masked(a), masked(b), values, prefixes):
            return f"code cell {index}: {problem}"
    return None
