"""Notebooks: which part of a .ipynb a byte offset sits in (code, markdown, outputs, metadata)."""

from __future__ import annotations

import json
import re

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


class NotebookLocator:
    """Maps byte offsets of a notebook's JSON text to the part of the notebook they sit in."""

    def __init__(self, data: bytes, types: list[str] | None = None) -> None:
        self.data = data
        self.types = types if types is not None else (cell_types(data) or [])
        self.spans: list[tuple[int, int, str]] | None = None

    def kind_at(self, offset: int) -> str:
        if self.spans is None:
            self.spans = list(self._string_spans())
        for start, end, kind in self.spans:
            if start <= offset < end:
                return kind
        return METADATA

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
                yield token.start(), token.end(), self._part([frame[1] for frame in stack])

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
