"""A value that the project's own function appends to another is a path's tail, not a folder.

``ensure_scratch_dir(subfolder_path="/data/")``, where the function's body (or a function it
hands the value on to) does ``SCRATCHDIR += subfolder_path``: the ``/data/`` is read after
``$SCRATCHDIR`` on every machine. Sound only where every use of the parameter in the body
is such a tail (the right of ``+`` or ``+=``, a comparison, or a tail parameter of a function
it calls): one other use (``open(subfolder_path)``) and it may be a folder of its own.
"""

from __future__ import annotations

import ast
import re
import warnings

# ``name(…, keyword="`` right before the string holding the path.
_KEYWORD_CALL = re.compile(rb"(?<![\w.])([A-Za-z_]\w*)\(\s*(?:[^()\n]*,\s*)?([A-Za-z_]\w*)\s*=\s*[rRuU]?[\"']$")
_DEPTH = 3


def keyword_call(data: bytes, line_start: int, start: int) -> tuple[str, str] | None:
    """(function, keyword) when the string at ``start`` is a keyword argument of a call of a plain name."""
    match = _KEYWORD_CALL.search(data, max(line_start, start - 200), start)
    return (match.group(1).decode(), match.group(2).decode()) if match else None


class TailParameters:
    """Which (function, parameter) pairs of a project only ever append their value to another."""

    def __init__(self, paths: list[str]) -> None:
        self.paths = paths  # the project's Python files, read again only to find a function's definition
        self.defs: dict[str, list[ast.FunctionDef | ast.AsyncFunctionDef]] = {}
        self.loaded: set[str] = set()
        self.parsed: set[str] = set()

    def _load(self, function: str) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
        """Every definition of ``function`` in the project (each file parsed once, all its functions kept)."""
        if function not in self.loaded:
            self.loaded.add(function)
            needle = f"def {function}(".encode()
            for path in self.paths:
                if path in self.parsed:
                    continue
                try:
                    with open(path, "rb") as handle:
                        data = handle.read()
                except OSError:
                    continue
                if needle in data:
                    self.parsed.add(path)
                    for node in _functions(data):
                        self.defs.setdefault(node.name, []).append(node)
        return self.defs.get(function, [])

    def is_tail(self, function: str, parameter: str, depth: int = 0) -> bool:
        candidates = [d for d in self._load(function) if parameter in _parameter_names(d)]
        return bool(candidates) and depth < _DEPTH and all(self._tail_in(d, parameter, depth) for d in candidates)

    def _tail_in(self, function: ast.FunctionDef | ast.AsyncFunctionDef, name: str, depth: int) -> bool:
        parents = {child: node for node in ast.walk(function) for child in ast.iter_child_nodes(node)}
        uses = [node for node in ast.walk(function) if isinstance(node, ast.Name) and node.id == name]
        return bool(uses) and all(self._tail_use(use, parents, depth) for use in uses)

    def _tail_use(self, use: ast.Name, parents: dict, depth: int) -> bool:
        parent = parents.get(use)
        if isinstance(parent, ast.AugAssign) and isinstance(parent.op, ast.Add) and parent.value is use:
            return True
        if isinstance(parent, ast.BinOp) and isinstance(parent.op, ast.Add) and parent.right is use:
            return True
        if isinstance(parent, ast.Compare):
            return True
        call, keyword = (parents.get(parent), parent.arg) if isinstance(parent, ast.keyword) else (parent, None)
        if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Name):
            return False
        if keyword is None:
            keyword = self._positional(call.func.id, call.args.index(use)) if use in call.args else None
        return keyword is not None and self.is_tail(call.func.id, keyword, depth + 1)

    def _positional(self, function: str, index: int) -> str | None:
        """The parameter at ``index`` where every definition of ``function`` that has one there agrees on its name."""
        names = {_parameter_names(d)[index] for d in self._load(function) if index < len(_parameter_names(d))}
        return names.pop() if len(names) == 1 else None


def _parameter_names(function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    return [a.arg for a in (*function.args.posonlyargs, *function.args.args, *function.args.kwonlyargs)]


def _functions(source: bytes) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError):
            return []
    return [node for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]
