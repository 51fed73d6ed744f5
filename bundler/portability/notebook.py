"""Notebooks: which part of a .ipynb a byte offset sits in (code, markdown, outputs, metadata)."""

from __future__ import annotations

import json
import re

from bundler.portability.context import Spans, python_docstring_spans

_JSON_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*"|[{}\[\]:,]')

# Kinds of a notebook's parts; markdown is documentation, binary output data is not text.
SOURCE, MARKDOWN, OUTPUT, DATA, METADATA = "notebook-source", "notebook-markdown", "notebook-output", "notebook-data", "notebook-metadata"


def cell_types(data: bytes) -> list[str] | None:
    """The type of each cell, or None when ``data`` is not a notebook (not JSON with a list of cells)."""
    try:
        document = json.loads(data)
    except ValueError:
        return None
    if not (isinstance(document, dict) and isinstance(document.get("cells"), list)):
        return None
    return [str(cell.get("cell_type", "")) if isinstance(cell, dict) else "" for cell in document["cells"]]


_MAGIC_LINE = re.compile(r"(?m)^([ \t]*)[!%]")  # IPython's shell and line magics: not Python to tokenize


class NotebookLocator:
    """Maps byte offsets of a notebook's JSON text to the part of the notebook they sit in."""

    def __init__(self, data: bytes, types: list[str] | None = None) -> None:
        self.data = data
        self.types = types if types is not None else (cell_types(data) or [])
        self.spans: list[tuple[int, int, str]] | None = None
        self.places: dict[int, tuple[int, int | None]] = {}  # a source string's start: (cell, line in the cell)
        self._bare: dict[int, tuple[list[str], Spans]] = {}  # per code cell: its lines and its bare strings
        self._cells: list | None = None

    def kind_at(self, offset: int) -> str:
        if self.spans is None:
            self.spans = list(self._string_spans())
        for start, end, kind in self.spans:
            if start <= offset < end:
                return kind
        return METADATA

    def in_bare_string(self, offset: int) -> bool:
        """Is ``offset`` (inside a code cell's source) inside a bare string statement of the cell's Python:
        a docstring or a string kept as a comment (``\"\"\"`` around disabled code), documentation as in a .py file?"""
        if self.spans is None:
            self.spans = list(self._string_spans())
        token = next(((start, end) for start, end, kind in self.spans if start <= offset < end and kind == SOURCE), None)
        if token is None or token[0] not in self.places:
            return False
        cell, line = self.places[token[0]]
        lines, bare = self._cell(cell)
        if not bare.spans:
            return False
        try:  # the characters of the line before the offset, its JSON escapes undone
            column = len(json.loads(self.data[token[0] : offset] + b'"'))
        except ValueError:
            column = 0
        before = sum(len(text) for text in lines[: line or 0])
        return bare.holds(before + column)

    def _cell(self, cell: int) -> tuple[list[str], Spans]:
        if cell not in self._bare:
            if self._cells is None:
                self._cells = _cells(self.data)
            source = _cell_source(self._cells, cell)
            text = "".join(source)
            python = not text.lstrip().startswith("%%")  # a cell magic runs another language
            masked = _MAGIC_LINE.sub(lambda m: m.group(1) + "#", text) if python else ""
            self._bare[cell] = (source, Spans(python_docstring_spans(masked)))
        return self._bare[cell]

    def _string_spans(self):
        stack: list[list] = []  # each: [container kind, current key or index, expecting key]
        for token in _JSON_TOKEN.finditer(self.data):
            text = token.group(0)
            if text in (b"{", b"["):
                if stack and stack[-1][0] == "[":
                    stack[-1][1] += 1
                stack.append(["{", None, True] if text == b"{" else ["[", -1, False])
            elif text in (b"}", b"]"):
                stack.pop()
            elif text == b":":
                stack[-1][2] = False
            elif text == b",":
                if stack[-1][0] == "{":
                    stack[-1][2] = True
            elif stack and stack[-1][0] == "{" and stack[-1][2]:
                stack[-1][1] = text[1:-1].decode("utf-8", errors="replace")
            else:
                if stack and stack[-1][0] == "[":
                    stack[-1][1] += 1
                keys = [frame[1] for frame in stack]
                part = self._part(keys)
                if part == SOURCE:
                    self.places[token.start()] = (keys[1], keys[3] if len(keys) > 3 and isinstance(keys[3], int) else None)
                yield token.start(), token.end(), part

    def _part(self, keys: list) -> str:
        if len(keys) < 3 or keys[0] != "cells":
            return METADATA
        if keys[2] == "source":
            index = keys[1]
            kind = self.types[index] if isinstance(index, int) and 0 <= index < len(self.types) else "code"
            return SOURCE if kind == "code" else MARKDOWN
        if keys[2] == "outputs":
            if len(keys) >= 6 and keys[4] == "data" and not str(keys[5]).startswith("text/") and keys[5] != "application/json":
                return DATA  # images and other binary payloads, base64 text
            return OUTPUT
        if keys[2] == "attachments":
            return DATA
        return METADATA


def _cells(data: bytes) -> list:
    try:
        cells = json.loads(data).get("cells", [])
    except (ValueError, AttributeError):
        return []
    return cells if isinstance(cells, list) else []


def _cell_source(cells: list, cell: int) -> list[str]:
    """A cell's source as its lines (a notebook may keep it as one string)."""
    try:
        source = cells[cell].get("source", "")
    except (LookupError, AttributeError, TypeError):
        return []
    return [source] if isinstance(source, str) else [str(line) for line in source]
