"""Notebooks: which part of a .ipynb a byte offset sits in (source, outputs, metadata)."""

from __future__ import annotations

import json
import re

_JSON_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*"|[{}\[\]:,]')


def is_notebook(data: bytes) -> bool:
    try:
        document = json.loads(data)
    except ValueError:
        return False
    return isinstance(document, dict) and isinstance(document.get("cells"), list)


class _NotebookLocator:
    """Maps byte offsets of a notebook's JSON text to source, output or metadata."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.spans: list[tuple[int, int, str]] | None = None

    def kind_at(self, offset: int) -> str:
        if self.spans is None:
            self.spans = list(self._string_spans())
        for start, end, kind in self.spans:
            if start <= offset < end:
                return kind
        return "notebook-metadata"

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
                if stack[-1][0] == "[":
                    stack[-1][1] += 1
                yield token.start(), token.end(), _notebook_part([frame[1] for frame in stack])


def _notebook_part(keys: list) -> str:
    if len(keys) >= 3 and keys[0] == "cells":
        if keys[2] == "source":
            return "notebook-source"
        if keys[2] == "outputs":
            return "notebook-output"
    return "notebook-metadata"
