"""The rewrites themselves: ``${NAME}`` text in configs and scripts; in Python source
and notebooks, string literals become calls of the helper (``project_path``,
``param_path``), token by token, the rest of the file untouched."""

from __future__ import annotations

import ast
import io
import json
import re
import tokenize

from bundler.portability import scan as paths

IMPORT_MARKER = "_bundle_paths import"


def rewrite_text(text: str, findings: list[paths.Finding]) -> tuple[str, int, list[dict]]:
    """Replace each finding by its textual replacement (``${NAME}/rest`` or a relative path)."""
    lines = text.splitlines(keepends=True)
    fixed, manual = 0, []
    for finding in sorted(findings, key=lambda f: (f.line, f.column), reverse=True):
        line = lines[finding.line - 1]
        start = finding.column - 1
        if line[start : start + len(finding.text)] != finding.text:
            manual.append(_manual(finding, "text moved while rewriting"))
            continue
        if finding.shape == "home-lookup":
            manual.append(_manual(finding, "a home lookup outside Python code"))
            continue
        lines[finding.line - 1] = line[:start] + finding.replacement + line[start + len(finding.text) :]
        fixed += 1
    return "".join(lines), fixed, manual


def _manual(finding: paths.Finding, why: str) -> dict:
    return {"line": finding.line, "column": finding.column, "text": finding.text, "why": why}


_STRING_PREFIX = re.compile(r"(?i)([rbuf]*)('''|\"\"\"|'|\")")


def rewrite_python(source: str, findings: list[paths.Finding], *, import_block: str | None = None) -> tuple[str, int, list[dict]]:
    """Turn each finding into code that reads the parameter or the project root at run time."""
    if not findings:
        return source, 0, []
    line_offsets = [0]
    for line in source.splitlines(keepends=True):
        line_offsets.append(line_offsets[-1] + len(line))
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return source, 0, [_manual(f, "the file does not tokenize as Python") for f in findings]

    def offset(row: int, col: int) -> int:
        return line_offsets[row - 1] + col

    spans = [(offset(*t.start), offset(*t.end), t) for t in tokens if t.type in (tokenize.STRING, tokenize.COMMENT)]
    edits: list[tuple[int, int, str]] = []
    manual: list[dict] = []
    by_token: dict[int, list[tuple[int, int, paths.Finding]]] = {}
    for finding in findings:
        start = offset(finding.line, finding.column - 1)
        end = start + len(finding.text)
        if source[start:end] != finding.text:
            manual.append(_manual(finding, "text moved while rewriting"))
            continue
        token_index = next((i for i, (s, e, _) in enumerate(spans) if s <= start and end <= e), None)
        if token_index is None:
            if finding.shape == "home-lookup":
                edits.append((start, end, _lookup_expression(finding)))
            else:
                manual.append(_manual(finding, "not inside a string or a comment"))
            continue
        by_token.setdefault(token_index, []).append((start, end, finding))
    for token_index, hits in by_token.items():
        token_start, token_end, token = spans[token_index]
        if token.type == tokenize.COMMENT or _is_triple_quoted(token.string):
            # comments and docstrings/help texts are prose: they get the placeholder text
            edits += [(s, e, f.replacement) for s, e, f in hits]
            continue
        edit, why = _string_edit(source, token_start, token_end, hits)
        if edit is None:
            manual += [_manual(f, why) for _, _, f in hits]
        else:
            edits.append(edit)
    new_source = source
    for start, end, replacement in sorted(edits, reverse=True):
        new_source = new_source[:start] + replacement + new_source[end:]
    fixed = len(findings) - len(manual)
    uses_helper = any("param_path(" in text or "project_path(" in text for _, _, text in edits)
    if uses_helper and IMPORT_MARKER not in source:
        new_source = _insert_import(new_source, import_block or PACKAGE_IMPORT)
    return new_source, fixed, manual


def _is_triple_quoted(literal: str) -> bool:
    head = _STRING_PREFIX.match(literal)
    return head is not None and len(head.group(2)) == 3


def _call(finding: paths.Finding, quote: str) -> str:
    if finding.project_relative is not None:
        relative = finding.project_relative
        return "project_path()" if relative == "." else f"project_path({quote}{relative}{quote})"
    rest = f", {quote}{finding.rest}{quote}" if finding.rest else ""
    return f"param_path({quote}{finding.parameter}{quote}{rest})"


def _lookup_expression(finding: paths.Finding) -> str:
    if finding.text.endswith("home()"):
        receiver = finding.text[: -len(".home()")]
        return f'{receiver}(param_path("{finding.parameter}"))'
    return _call(finding, '"')


def _string_edit(source: str, token_start: int, token_end: int, hits) -> tuple[tuple[int, int, str] | None, str]:
    literal = source[token_start:token_end]
    head = _STRING_PREFIX.match(literal)
    if head is None:
        return None, "unrecognised string literal"
    prefix, quote = head.group(1), head.group(2)
    if "b" in prefix.lower():
        return None, "inside a bytes literal"
    body_start = token_start + len(prefix) + len(quote)
    body_end = token_end - len(quote)
    hits = sorted(hits, key=lambda hit: hit[0])
    is_f = "f" in prefix.lower()
    if len(hits) == 1 and not is_f and hits[0][0] == body_start and hits[0][1] == body_end:
        return (token_start, token_end, _call(hits[0][2], '"')), ""
    inner = "'" if '"' in quote else '"'

    def keep(text: str) -> str:
        return text if is_f else text.replace("{", "{{").replace("}", "}}")

    pieces, cursor = [], body_start
    for start, end, finding in hits:
        pieces.append(keep(source[cursor:start]))
        pieces.append("{" + _call(finding, inner) + "}")
        cursor = end
    pieces.append(keep(source[cursor:body_end]))
    new_prefix = prefix if is_f else prefix + "f"
    return (token_start, token_end, new_prefix + quote + "".join(pieces) + quote), ""


PACKAGE_IMPORT = (
    "try:  # machine-specific paths: see _bundle_paths.py (written by `bundler paths --fix`)\n"
    "    from ._bundle_paths import param_path, project_path\n"
    "except ImportError:  # run as a script, not as part of a package\n"
    "    from _bundle_paths import param_path, project_path\n"
)


NOTEBOOK_IMPORT = "from _bundle_paths import param_path, project_path  # written by `bundler paths --fix`\n"


def _insert_import(source: str, block: str) -> str:
    """Insert after the module docstring and ``from __future__`` imports."""
    try:
        body = ast.parse(source).body
    except SyntaxError:
        body = []
    after = 0
    for index, node in enumerate(body):
        is_docstring = (
            index == 0
            and isinstance(node, ast.Expr)
            and isinstance(getattr(node, "value", None), ast.Constant)
            and isinstance(node.value.value, str)
        )
        is_future = isinstance(node, ast.ImportFrom) and node.module == "__future__"
        if is_docstring or is_future:
            after = node.end_lineno
        else:
            break
    lines = source.splitlines(keepends=True)
    if after == 0:
        while after < len(lines) and (lines[after].startswith("#!") or re.match(r"#.*coding[:=]", lines[after])):
            after += 1
    if after and not lines[after - 1].endswith("\n"):
        lines[after - 1] += "\n"
    return "".join(lines[:after]) + block + "".join(lines[after:])


def _rewrite_notebook(text: str, scanner, relative: str) -> tuple[str, int, list[dict]]:
    """Code cells become Python that reads parameters; outputs are scrubbed; metadata made relative."""
    document = json.loads(text)
    fixed, manual = 0, []
    for cell in document.get("cells", []):
        if not isinstance(cell, dict):
            continue
        source = cell.get("source", "")
        joined = "".join(source) if isinstance(source, list) else str(source)
        found = scanner.findings_in(relative, joined.encode("utf-8"), "code")
        if found:
            if cell.get("cell_type") == "code":
                new, count, problems = rewrite_python(joined, found, import_block=NOTEBOOK_IMPORT)
            else:
                new, count, problems = rewrite_text(joined, found)
            fixed += count
            manual += problems
            cell["source"] = new.splitlines(keepends=True) if isinstance(source, list) else new
        if "outputs" in cell:
            cell["outputs"], count = _scrub(cell["outputs"], scanner, relative)
            fixed += count
        if "metadata" in cell:
            cell["metadata"], count = _scrub(cell["metadata"], scanner, relative)
            fixed += count
    if "metadata" in document:
        document["metadata"], count = _scrub(document["metadata"], scanner, relative)
        fixed += count
    indent = _json_indent(text)
    return json.dumps(document, indent=indent, ensure_ascii=False) + "\n", fixed, manual


def _scrub(value, scanner, relative: str):
    """Replace every path in the strings of ``value`` by its textual replacement."""
    if isinstance(value, str):
        found = scanner.findings_in(relative, value.encode("utf-8"), "config")
        if not found:
            return value, 0
        new, count, _ = rewrite_text(value, found)
        return new, count
    if isinstance(value, list):
        total, items = 0, []
        for item in value:
            new, count = _scrub(item, scanner, relative)
            items.append(new)
            total += count
        return items, total
    if isinstance(value, dict):
        total, items = 0, {}
        for key, item in value.items():
            new, count = _scrub(item, scanner, relative)
            items[key] = new
            total += count
        return items, total
    return value, 0


def _json_indent(text: str) -> int:
    match = re.search(r"\n( +)\S", text)
    return len(match.group(1)) if match else 1
