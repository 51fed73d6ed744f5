"""Python source: each found path becomes code that reads its parameter or the project root.

String literals become calls of the helper (``param_path``, ``project_path``), token by
token, the rest of the file untouched: a whole literal becomes the call, a path inside a
longer literal becomes an f-string field, a path inside an f-string's text a new field
(never doubled braces), a home lookup in code or in an f-string's expression becomes
the call itself. Comments get the placeholder text. What cannot be rewritten this way
(bytes, a path inside an f-string expression, code that does not tokenize) is left as is
and reported. fix.py proves each rewrite by evaluation (equivalence.py) before writing.
"""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass, field

IMPORT_MARKER = "_bundle_paths import"
PACKAGE_IMPORT = (
    "try:  # machine-specific paths: see _bundle_paths.py (written by `bundler paths --fix`)\n"
    "    from ._bundle_paths import param_path, project_path\n"
    "except ImportError:  # run as a script, not as part of a package\n"
    "    from _bundle_paths import param_path, project_path\n"
)
NOTEBOOK_IMPORT = "from _bundle_paths import param_path, project_path  # written by `bundler paths --fix`\n"

_STRING_PREFIX = re.compile(r"(?i)([rbuf]*)('''|\"\"\"|'|\")")


@dataclass
class PythonRewrite:
    source: str
    fixed: int = 0
    manual: list[dict] = field(default_factory=list)
    import_line: int = 0  # 1-based line before which the import block went (0: none)
    import_lines: int = 0
    edits: list[tuple[int, int, str]] = field(default_factory=list)  # code changed: (start, end, new text) on the source


def manual(finding, why: str) -> dict:
    return {"line": finding.line, "column": finding.column, "text": finding.text, "why": why}


def rewrite_python(source: str, findings: list, *, import_block: str | None = None) -> PythonRewrite:
    """Turn each finding into code that reads the parameter or the project root at run time."""
    result = PythonRewrite(source)
    if not findings:
        return result
    offsets = line_offsets(source)
    try:
        spans = literal_spans(source, offsets)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        result.manual = [manual(f, "the file does not tokenize as Python") for f in findings]
        return result
    edits: list[tuple[int, int, str]] = []
    by_token: dict[int, list[tuple]] = {}  # (start, end, the finding) per string token
    for finding in findings:
        start = offsets[finding.line - 1] + finding.column - 1
        end = start + len(finding.text)
        if source[start:end] != finding.text:
            result.manual.append(manual(finding, "text moved while rewriting"))
            continue
        index = next((i for i, (s, e, _) in enumerate(spans) if s <= start and end <= e), None)
        if index is None:
            if finding.shape == "home-lookup":
                edits.append((start, end, lookup_call(finding, '"')))
            else:
                result.manual.append(manual(finding, "not inside a string or a comment"))
            continue
        by_token.setdefault(index, []).append((start, end, finding))
    for index, hits in by_token.items():
        token_start, token_end, kind = spans[index]
        if kind == "comment":
            edits += [(s, e, f.replacement) for s, e, f in hits]
            continue
        edit, problems = _string_edit(source, spans, index, hits)
        result.manual += problems
        if edit is not None:
            edits.append(edit)
    new = source
    for start, end, text in sorted(edits, reverse=True):
        new = new[:start] + text + new[end:]
    result.edits = [edit for edit in sorted(edits) if not _in_comment(edit, spans)]
    result.fixed = len(findings) - len(result.manual)
    block = PACKAGE_IMPORT if import_block is None else import_block
    if block and any("param_path(" in text or "project_path(" in text for _, _, text in edits) and IMPORT_MARKER not in source:
        new, result.import_line = insert_import(new, block)
        result.import_lines = block.count("\n")
    result.source = new
    return result


def _in_comment(edit: tuple[int, int, str], spans) -> bool:
    return any(kind == "comment" and start <= edit[0] and edit[1] <= end for start, end, kind in spans)


def line_offsets(text: str) -> list[int]:
    """Offset of each line's start, lines split at "\\n" as the scan counts them."""
    offsets = [0]
    for match in re.finditer("\n", text):
        offsets.append(match.end())
    return offsets


def literal_spans(source: str, offsets: list[int]) -> list[tuple[int, int, str]]:
    """(start, end, "string" | "comment") of every literal; an f-string is one span on every Python."""
    spans: list[tuple[int, int, str]] = []
    fstring_start, depth = 0, 0
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.end[0] > len(offsets):
            continue  # the end marker after a last line without a newline
        start = offsets[token.start[0] - 1] + token.start[1]
        end = offsets[token.end[0] - 1] + token.end[1]
        name = tokenize.tok_name[token.type]
        if name == "FSTRING_START":  # Python 3.12+: an f-string comes in pieces
            depth += 1
            if depth == 1:
                fstring_start = start
        elif name == "FSTRING_END":
            depth -= 1
            if depth == 0:
                spans.append((fstring_start, end, "string"))
        elif depth:
            continue
        elif token.type == tokenize.STRING:
            spans.append((start, end, "string"))
        elif token.type == tokenize.COMMENT:
            spans.append((start, end, "comment"))
    return spans


def _string_head(literal: str) -> tuple[str, str]:
    """The prefix (``rb``, ``f``…) and the opening quote of a string literal token."""
    head = _STRING_PREFIX.match(literal)
    if head is None:
        raise ValueError(f"not a string literal: {literal[:40]!r}")
    return head.group(1), head.group(2)


def fstring_fields(literal: str) -> list[tuple[int, int]]:
    """(start, end) of each ``{…}`` replacement field of an f-string literal, relative to it."""
    prefix, opening = _string_head(literal)
    body_start, body_end = len(prefix) + len(opening), len(literal) - len(opening)
    fields, index = [], body_start
    while index < body_end:
        char = literal[index]
        if char in "{}" and literal[index + 1 : index + 2] == char:
            index += 2
            continue
        if char != "{":
            index += 1
            continue
        start, depth, quote = index, 0, None
        while index < body_end:
            char = literal[index]
            if quote:
                quote = None if char == quote else quote
            elif char in "'\"":
                quote = char
            elif char in "([{":
                depth += 1
            elif char in ")]}":
                depth -= 1
                if depth == 0:
                    break
            index += 1
        fields.append((start, index + 1))
        index += 1
    return fields


def _string_edit(source: str, spans, index: int, hits) -> tuple[tuple[int, int, str] | None, list[dict]]:
    token_start, token_end, _ = spans[index]
    literal = source[token_start:token_end]
    prefix, quote = _string_head(literal)
    if "b" in prefix.lower():
        return None, [manual(f, "inside a bytes literal") for _, _, f in hits]
    is_f = "f" in prefix.lower()
    inner = "'" if '"' in quote else '"'
    body_start, body_end = token_start + len(prefix) + len(quote), token_end - len(quote)
    fields = [(token_start + s, token_start + e) for s, e in fstring_fields(literal)] if is_f else []
    problems, code_edits, text_hits = [], [], []
    for start, end, finding in sorted(hits, key=lambda hit: hit[0]):
        if any(s <= start < e for s, e in fields):
            if finding.shape == "home-lookup":
                code_edits.append((start, end, lookup_call(finding, inner)))
            else:
                problems.append(manual(finding, "inside an f-string expression"))
        else:
            text_hits.append((start, end, finding))
    neighbours = {spans[i][2] for i in (index - 1, index + 1) if 0 <= i < len(spans) and _adjacent(source, spans, index, i)}
    if len(text_hits) == 1 and not is_f and not code_edits and "string" not in neighbours:
        start, end, finding = text_hits[0]
        if (start, end) == (body_start, body_end):
            return (token_start, token_end, helper_call(finding, '"')), problems
    pieces, cursor = [], body_start
    edits = sorted(code_edits + [(s, e, "{" + helper_call(f, inner) + "}") for s, e, f in text_hits])
    for start, end, text in edits:
        piece = source[cursor:start]
        pieces.append(piece if is_f else piece.replace("{", "{{").replace("}", "}}"))
        pieces.append(text)
        cursor = end
    tail = source[cursor:body_end]
    pieces.append(tail if is_f else tail.replace("{", "{{").replace("}", "}}"))
    new_prefix = prefix if is_f else prefix.replace("u", "").replace("U", "") + "f"
    return (token_start, token_end, new_prefix + quote + "".join(pieces) + quote), problems


def _adjacent(source: str, spans, index: int, other: int) -> bool:
    """Are two literal spans parts of one implicit concatenation (only space or comments between)?"""
    first, second = sorted((index, other))
    return source[spans[first][1] : spans[second][0]].strip(" \t\r\n\\") == ""


def helper_call(finding, quote: str) -> str:
    if finding.project_relative is not None:
        relative = finding.project_relative
        return "project_path()" if relative == "." else f"project_path({quote}{relative}{quote})"
    rest = f", {quote}{finding.rest}{quote}" if finding.rest else ""
    return f"param_path({quote}{finding.parameter}{quote}{rest})"


def lookup_call(finding, quote: str) -> str:
    """The code a home lookup becomes: ``Path.home()`` stays a Path, the others a string."""
    if finding.text.endswith(".home()") and finding.project_relative is None:
        return f"{finding.text[: -len('.home()')]}({helper_call(finding, quote)})"
    return helper_call(finding, quote)


def header_end(source: str) -> int:
    """The last line of the module docstring and ``from __future__`` imports (0: none), read from tokens.

    Tokens, not the AST: a file written for a newer Python than the one running bundler reads the same.
    """
    after, statement, index = 0, [], 0
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type in (tokenize.NL, tokenize.COMMENT, tokenize.ENCODING, tokenize.INDENT, tokenize.DEDENT):
                continue
            if token.type not in (tokenize.NEWLINE, tokenize.ENDMARKER):
                statement.append(token)
                continue
            if not statement:
                continue
            docstring = index == 0 and all(t.type == tokenize.STRING for t in statement)
            future = [t.string for t in statement[:2]] == ["from", "__future__"]
            if not (docstring or future):
                break
            after, statement, index = statement[-1].end[0], [], index + 1
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return 0
    return after


def insert_import(source: str, block: str) -> tuple[str, int]:
    """Insert ``block`` after the module docstring and ``from __future__`` imports; (new source, line it went before)."""
    after = header_end(source)
    lines = source.splitlines(keepends=True)
    if after == 0:
        while after < len(lines) and (lines[after].startswith("#!") or re.match(r"#.*coding[:=]", lines[after])):
            after += 1
    newline = "\r\n" if "\r\n" in source else "\n"
    if after and not lines[after - 1].endswith(("\n", "\r")):
        lines[after - 1] += newline
    return "".join(lines[:after]) + block.replace("\n", newline) + "".join(lines[after:]), after + 1
