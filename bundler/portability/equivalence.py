"""Proofs that a rewrite keeps a file's meaning, by evaluation, with each parameter set to its original value.

Python: both versions are parsed; every helper call, home lookup, ``expanduser`` and
join of constants is evaluated (the helper's own expansion, a home that no real path
can equal), then the two trees must be equal, the inserted import aside. A path inside
the project is compared with the project root standing for its original prefix.
OmegaConf YAML: both versions are loaded and every changed value resolved through
OmegaConf with the parameters in the environment. Shell scripts are proven in shell.py.
A proof returns None, or the reason the rewrite is refused.
"""

from __future__ import annotations

import ast
import ntpath
import posixpath
import re
import warnings
from typing import cast

from bundler.portability.bundle_paths import expand_value, join

HOME = "/\x00home"  # stands for the home folder: no real path equals it
ROOT = "/\x00project"  # stands for the project root
_WINDOWS = re.compile(r"^[A-Za-z]:[\\/]")
_HOME_KEYS = ("HOME", "USERPROFILE")


def python_problem(original: str, new: str, values: dict[str, str], prefixes: list[str]) -> str | None:
    """Why ``new`` does not mean ``original`` (None: same meaning). ``prefixes``: project roots as written."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the project's own invalid escapes are not ours to report
        try:
            before = ast.parse(original)
        except SyntaxError as error:
            return f"did not parse before the rewrite (SyntaxError at line {error.lineno}): not modified"
        try:
            after = ast.parse(new)
        except SyntaxError as error:
            return f"the rewrite would not parse (SyntaxError at line {error.lineno}): not modified"
    environment = {**values, "HOME": HOME}
    left = _Evaluate(environment, prefixes).visit(before)
    right = _Evaluate(environment, prefixes).visit(_without_helper_import(after))
    if ast.dump(left) == ast.dump(right):
        return None
    line = _first_difference(left, right)
    return f"the rewrite could not be proven to keep the code's meaning (line {line}): not modified"


def _without_helper_import(tree: ast.Module) -> ast.Module:
    def helper(node) -> bool:
        if isinstance(node, ast.ImportFrom) and (node.module or "").endswith("_bundle_paths"):
            return True
        return isinstance(node, ast.Try) and all(helper(n) for n in node.body) and all(helper(n) for h in node.handlers for n in h.body)

    tree.body = [node for node in tree.body if not helper(node)]
    return tree


def _first_difference(left: ast.Module, right: ast.Module) -> int:
    for a, b in zip(left.body, right.body, strict=False):
        if ast.dump(a) != ast.dump(b):
            return getattr(a, "lineno", 0)
    return getattr(left.body[-1], "lineno", 0) if left.body else 0


def _dotted(node) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return _dotted(node.value) + "." + node.attr
    return ""


def _text(node) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def same_path(a: str, b: str) -> bool:
    """Equal strings, or the same Windows path in another spelling (the separators Windows accepts)."""
    if a == b:
        return True
    return bool(_WINDOWS.match(a) and _WINDOWS.match(b)) and ntpath.normcase(ntpath.normpath(a)) == ntpath.normcase(ntpath.normpath(b))


class _Evaluate(ast.NodeTransformer):
    """Folds what a path rewrite touches into constants, the same way on both sides."""

    def __init__(self, environment: dict[str, str], prefixes: list[str]) -> None:
        self.environment = environment
        self.prefixes = sorted(prefixes, key=len, reverse=True)

    def constant(self, value: str) -> ast.Constant:
        return ast.Constant(self.normal(value))

    def normal(self, value: str) -> str:
        """A leading ~ or $HOME means the home folder where a path is used; a project prefix its root."""
        for prefix in self.prefixes:
            stem = prefix.rstrip("/\\")
            if value == prefix or value.startswith((stem + "/", stem + "\\")):
                rest = value[len(stem) :]
                value = ROOT + (rest.replace("\\", "/") if _WINDOWS.match(stem) else rest)
                break
        if value.startswith(("~", "$HOME", "${HOME}")):
            value = expand_value(value, self.environment)
        if _WINDOWS.match(value):
            value = ntpath.normcase(ntpath.normpath(value))
        return value

    def visit_Constant(self, node):
        return self.constant(node.value) if isinstance(node.value, str) else node

    def visit_Subscript(self, node):
        node = self.generic_visit(node)
        if _dotted(node.value) in ("os.environ", "environ") and _text(node.slice) in _HOME_KEYS:
            return self.constant(HOME)
        return node

    def visit_Call(self, node):
        node = self.generic_visit(node)
        name = _dotted(node.func)
        args = [_text(a) for a in node.args]
        texts = [a for a in args if a is not None]  # every argument when all are constant text
        short = name.rsplit(".", 1)[-1]
        if short == "param_path" and texts and len(texts) == len(args) and not node.keywords:
            value = self.environment.get(texts[0])
            return node if value is None else self.constant(join(expand_value(value, self.environment), texts[1] if len(texts) > 1 else ""))
        if short == "project_path" and len(texts) == len(args):
            return ast.Constant(join(ROOT, texts[0]) if texts else ROOT)
        if short == "expanduser" and len(args) == 1 and args[0] is not None:
            return self.constant(args[0])
        if name.endswith(("getenv", "environ.get")) and args and args[0] in _HOME_KEYS:
            return self.constant(HOME)
        if short == "home" and not node.args and isinstance(node.func, ast.Attribute) and _dotted(node.func.value).endswith("Path"):
            return ast.Call(func=node.func.value, args=[self.constant(HOME)], keywords=[])
        if name in ("os.path.join", "path.join", "posixpath.join") and len(args) >= 2 and args[0] is not None and args[1] is not None:
            folded = posixpath.join(args[0], args[1])
            node.args = [self.constant(folded)] + node.args[2:]
            return self.visit_Call(node) if len(node.args) >= 2 else node.args[0]
        return node

    def visit_BinOp(self, node):
        node = self.generic_visit(node)
        left, right = _text(node.left), _text(node.right)
        if isinstance(node.op, ast.Add) and left is not None and right is not None:
            return self.constant(left + right)
        if (
            isinstance(node.op, ast.Div)
            and right is not None
            and isinstance(node.left, ast.Call)
            and _dotted(node.left.func).endswith("Path")
        ):
            inner = [_text(a) for a in node.left.args]
            if len(inner) == 1 and inner[0] is not None and not node.left.keywords:
                return ast.Call(func=node.left.func, args=[self.constant(posixpath.join(inner[0], right))], keywords=[])
        return node

    def visit_JoinedStr(self, node):
        """Constant fields become text, adjacent texts one: the same f-string however it was split."""
        node = self.generic_visit(node)
        values: list[ast.expr] = []
        for value in node.values:
            if (
                isinstance(value, ast.FormattedValue)
                and value.conversion == -1
                and value.format_spec is None
                and _text(value.value) is not None
            ):
                value = value.value
            text, previous = _text(value), (_text(values[-1]) if values else None)
            if text is not None and previous is not None:
                values[-1] = ast.Constant(previous + text)
            else:
                values.append(value)
        only = _text(values[0]) if len(values) == 1 else None
        if only is not None:
            return self.constant(only)
        node.values = values
        return node


def omegaconf_problem(original: str, new: str, values: dict[str, str]) -> str | None:
    """Why the OmegaConf document ``new`` does not resolve to ``original``'s values (None: it does)."""
    import os

    import yaml

    try:
        from omegaconf import OmegaConf
        from omegaconf.errors import OmegaConfBaseException
    except ImportError:
        return "omegaconf is not installed here, so the rewrite cannot be proven (pip install omegaconf): not modified"

    try:
        before = list(yaml.safe_load_all(original))
    except yaml.YAMLError as error:
        return f"did not parse before the rewrite ({type(error).__name__}): not modified"
    try:
        after = list(yaml.safe_load_all(new))
    except yaml.YAMLError as error:
        return f"the rewrite would not parse ({type(error).__name__}): not modified"
    changed = list(_changed_leaves(before, after, ()))
    if changed is None or any(path is None for path, _, _ in changed):
        return "the rewrite changed the document's structure: not modified"
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        for path, old, value in changed:
            holder = OmegaConf.create({"v": value})
            try:
                resolved = cast(dict, OmegaConf.to_container(holder, resolve=True))["v"]  # a DictConfig comes back a dict
            except OmegaConfBaseException:
                resolved = _textual(value, values)  # another interpolation in the value: compare the text it holds
            if not (isinstance(old, str) and same_path(str(resolved), old)):
                where = ".".join(map(str, path))
                return f"the value at {where} would resolve to {resolved!r}, not {old!r}: not modified"
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    return None


def _textual(value: str, values: dict[str, str]) -> str:
    return re.sub(r"\$\{oc\.env:([A-Za-z_][A-Za-z0-9_]*)\}", lambda m: values.get(m.group(1), m.group(0)), value)


def _changed_leaves(before, after, path):
    """(path, old, new) of every leaf that differs; path None where the structure itself differs."""
    if isinstance(before, dict) and isinstance(after, dict):
        if list(before) != list(after):
            yield None, before, after
            return
        for key in before:
            yield from _changed_leaves(before[key], after[key], (*path, key))
    elif isinstance(before, list) and isinstance(after, list):
        if len(before) != len(after):
            yield None, before, after
            return
        for index, (a, b) in enumerate(zip(before, after, strict=True)):
            yield from _changed_leaves(a, b, (*path, index))
    elif before != after:
        yield (path if isinstance(after, str) else None), before, after
