"""Proofs that a rewrite keeps a file's meaning, by evaluation, with each parameter set to its original value.

Python: each changed expression and what replaced it are parsed and evaluated (every
helper call, home lookup, ``expanduser`` and join of constants; the helper's own
expansion, a home that no real path can equal; a ``~`` only where ``expanduser`` expands
it), and must be equal; where the running Python parses the whole file, both trees are
compared as well, the inserted import aside. A path inside the project is compared with
the project root standing for its original prefix.
OmegaConf YAML: both versions are loaded and every changed value, its ``${oc.env:NAME}``
set to the parameter's value, must be the old one (the same with or without OmegaConf
installed). Shell scripts are proven in shell.py.
A proof returns None, or the reason the rewrite is refused.
"""

from __future__ import annotations

import ast
import io
import ntpath
import posixpath
import re
import tokenize
import warnings

from bundler.portability.bundle_paths import expand_value, join

HOME = "/\x00home"  # stands for the home folder: no real path equals it
ROOT = "/\x00project"  # stands for the project root
_WINDOWS = re.compile(r"^[A-Za-z]:[\\/]")
_HOME_KEYS = ("HOME", "USERPROFILE")


def python_problem(
    original: str, new: str, values: dict[str, str], prefixes: list[str], edits: list[tuple[int, int, str]] | None = None
) -> str | None:
    """Why ``new`` does not mean ``original`` (None: same meaning). ``prefixes``: project roots as written.

    With ``edits`` (what the rewrite changed, on ``original``), each changed expression is proven
    on its own: a file written for a newer Python than the one running bundler is proven the
    same way. Where this Python parses the whole file, the two trees are compared as well.
    """
    if edits is not None:
        unreadable = python_unreadable(original)
        if unreadable is not None:
            return f"did not parse before the rewrite ({unreadable}): not modified"
        problem = _edits_problem(original, edits, values, prefixes)
        if problem is not None or not parses(original):
            return problem
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


def parses(source: str) -> bool:
    """Does the Python running bundler parse ``source``?"""
    return _parse_error(source) is None


def _parse_error(source: str) -> SyntaxError | ValueError | None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            ast.parse(source)
        except (SyntaxError, ValueError) as error:
            return error
    return None


_PRINT_STATEMENT = re.compile(r"^[ \t]*(?:print|exec)[ \t]+[\"'\w%]", re.M)


def python_unreadable(source: str) -> str | None:
    """Why ``source`` is no Python 3 of any version (None: it is), as "SyntaxError at line N".

    The Python running bundler parses it first. Where it cannot, the file still counts when
    only newer syntax can be the cause (3.12's f-strings, ``type X = …``): it tokenizes, its
    indentation is consistent and no Python 2 statement shows. The same files pass on every
    Python bundler runs on.
    """
    error = _parse_error(source)
    if error is None:
        return None
    line = getattr(error, "lineno", None)
    where = f" at line {line}" if line else ""
    parsed = f"{type(error).__name__}{where}"
    if isinstance(error, (IndentationError, ValueError)) or _PRINT_STATEMENT.search(source):
        return parsed
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type == tokenize.ERRORTOKEN and not token.string.isspace():
                return parsed
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return parsed
    return None


def _edits_problem(original: str, edits: list[tuple[int, int, str]], values: dict[str, str], prefixes: list[str]) -> str | None:
    environment = {**values, "HOME": HOME}
    for start, end, text in edits:
        line = original.count("\n", 0, start) + 1
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                before, after = ast.parse(original[start:end], mode="eval"), ast.parse(text, mode="eval")
            except SyntaxError:
                return f"the rewrite could not be proven to keep the code's meaning (line {line}): not modified"
        left = _Evaluate(environment, prefixes).visit(before)
        right = _Evaluate(environment, prefixes).visit(after)
        if ast.dump(left) != ast.dump(right):
            return f"the rewrite could not be proven to keep the code's meaning (line {line}): not modified"
    return None


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

    def constant(self, value: str, expand: bool = False) -> ast.Constant:
        return ast.Constant(self.normal(value, expand))

    def normal(self, value: str, expand: bool = False) -> str:
        """A project prefix stands for its root; a leading ~ or $HOME is the home only where it is expanded.

        Python never expands ~ by itself: ``os.makedirs("~/Data")`` makes a folder named ~.
        """
        for prefix in self.prefixes:
            stem = prefix.rstrip("/\\")
            if value == prefix or value.startswith((stem + "/", stem + "\\")):
                rest = value[len(stem) :]
                value = ROOT + (rest.replace("\\", "/") if _WINDOWS.match(stem) else rest)
                break
        if expand and value.startswith(("~", "$HOME", "${HOME}")):
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
            return (
                node
                if value is None
                else self.constant(join(expand_value(value, self.environment), texts[1] if len(texts) > 1 else ""), True)
            )
        if short == "project_path" and len(texts) == len(args):
            return ast.Constant(join(ROOT, texts[0]) if texts else ROOT)
        if short == "expanduser" and len(args) == 1 and args[0] is not None:
            return self.constant(args[0], expand=True)
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
    """Why the OmegaConf document ``new`` does not resolve to ``original``'s values (None: it does).

    The only interpolation a rewrite writes is ``${oc.env:NAME}``, which OmegaConf resolves to
    the variable's text; so each changed value, with those set to the parameters' values, must
    be the old value. OmegaConf itself is not needed: the proof is the same whether or not it
    is installed next to bundler.
    """
    import yaml

    try:
        before = list(yaml.safe_load_all(original))
    except yaml.YAMLError as error:
        return f"did not parse before the rewrite ({type(error).__name__}): not modified"
    try:
        after = list(yaml.safe_load_all(new))
    except yaml.YAMLError as error:
        return f"the rewrite would not parse ({type(error).__name__}): not modified"
    changed = list(_changed_leaves(before, after, ()))
    structural = [path for path, _, _, same_shape in changed if not same_shape]
    if structural:
        document, *keys = structural[0] or (0,)  # the first step is the document's index in the stream
        where = ".".join(map(str, keys)) or "the top level"
        where += f" of document {document + 1}" if len(before) > 1 else ""
        return f"the rewrite would change the document's structure at {where} (its keys, a list's length or a value's type): not modified"
    for path, old, value, _ in changed:
        resolved = _textual(value, values)
        where = ".".join(map(str, path))
        if "\\${" in value or any("${" in values.get(n, "") for n in re.findall(r"\$\{oc\.env:(\w+)\}", value)):
            return f"the value at {where} holds an escaped or nested interpolation: not modified"
        if not (isinstance(old, str) and same_path(resolved, old)):
            return f"the value at {where} would resolve to {resolved!r}, not {old!r}: not modified"
    return None


def _textual(value: str, values: dict[str, str]) -> str:
    return re.sub(r"\$\{oc\.env:([A-Za-z_][A-Za-z0-9_]*)\}", lambda m: values.get(m.group(1), m.group(0)), value)


def _changed_leaves(before, after, path):
    """(path, old, new, same shape) of every leaf that differs; same shape False where the structure
    itself differs there (other keys, another length, a value no longer a string)."""
    if isinstance(before, dict) and isinstance(after, dict):
        if list(before) != list(after):
            yield path, before, after, False
            return
        for key in before:
            yield from _changed_leaves(before[key], after[key], (*path, key))
    elif isinstance(before, list) and isinstance(after, list):
        if len(before) != len(after):
            yield path, before, after, False
            return
        for index, (a, b) in enumerate(zip(before, after, strict=True)):
            yield from _changed_leaves(a, b, (*path, index))
    elif before != after:
        yield path, before, after, isinstance(after, str)
