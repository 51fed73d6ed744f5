"""PEP 508 environment markers and the PEP 440 versions they compare, in the standard library.

One evaluator for every reader of a requirement line: bundler (requirements.in for the
Target), the diagnostics (the lock against the running interpreter). It agrees with
``packaging.markers``: a version variable (``python_version``, ``python_full_version``,
``implementation_version``, ``platform_release``) is compared as a PEP 440 version when
the right-hand side makes a valid specifier (``~=``, ``===``, ``==3.*`` included), any
other comparison as text, which has no order (``<``/``>`` never hold, ``<=``/``>=`` only
when equal); ``and`` binds tighter than ``or``; a comparison that has no meaning
(``~=`` on text) raises ``MarkerError``, as packaging raises ``UndefinedComparison``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

VERSION_VARIABLES = frozenset({"implementation_version", "platform_release", "python_full_version", "python_version"})
VARIABLES = frozenset(
    {
        "implementation_name",
        "implementation_version",
        "os_name",
        "platform_machine",
        "platform_python_implementation",
        "platform_release",
        "platform_system",
        "platform_version",
        "python_full_version",
        "python_version",
        "sys_platform",
        "extra",
    }
)
OPERATORS = ("===", "==", "!=", "<=", ">=", "~=", "<", ">", "not in", "in")


class MarkerError(ValueError):
    """A marker that does not parse, or a comparison that has no meaning."""


# ----- versions (PEP 440) -----------------------------------------------------------
_VERSION = re.compile(
    r"""^\s*v?
    (?:(?P<epoch>[0-9]+)!)?
    (?P<release>[0-9]+(?:\.[0-9]+)*)
    (?P<pre>[-_.]?(?P<pre_l>alpha|a|beta|b|preview|pre|c|rc)[-_.]?(?P<pre_n>[0-9]+)?)?
    (?P<post>(?:-(?P<post_n1>[0-9]+))|(?:[-_.]?(?P<post_l>post|rev|r)[-_.]?(?P<post_n2>[0-9]+)?))?
    (?P<dev>[-_.]?(?P<dev_l>dev)[-_.]?(?P<dev_n>[0-9]+)?)?
    (?:\+(?P<local>[a-z0-9]+(?:[-_.][a-z0-9]+)*))?
    \s*$""",
    re.VERBOSE | re.IGNORECASE | re.ASCII,
)
_PRE = {"alpha": "a", "a": "a", "beta": "b", "b": "b", "c": "rc", "rc": "rc", "pre": "rc", "preview": "rc"}
_INFINITY, _NEG = (1, ""), (-1, "")


@dataclass(frozen=True)
class Version:
    epoch: int
    release: tuple[int, ...]
    pre: tuple[str, int] | None
    post: int | None
    dev: int | None
    local: tuple[int | str, ...] | None

    @property
    def is_prerelease(self) -> bool:
        return self.pre is not None or self.dev is not None

    @property
    def is_postrelease(self) -> bool:
        return self.post is not None

    @property
    def public(self) -> Version:
        return Version(self.epoch, self.release, self.pre, self.post, self.dev, None)

    @property
    def base(self) -> Version:
        return Version(self.epoch, self.release, None, None, None, None)

    def key(self) -> tuple:
        release = list(self.release)
        while len(release) > 1 and release[-1] == 0:
            release.pop()
        if self.pre is None and self.post is None and self.dev is not None:
            pre: tuple = (-1, "", 0)  # 1.0.dev0 sorts before 1.0a0
        elif self.pre is None:
            pre = (1, "", 0)
        else:
            pre = (0, *self.pre)
        post = (-1, 0) if self.post is None else (0, self.post)
        dev = (1, 0) if self.dev is None else (0, self.dev)
        local = () if self.local is None else tuple((1, part, "") if isinstance(part, int) else (0, 0, part) for part in self.local)
        return (self.epoch, tuple(release), pre, post, dev, (0 if self.local is None else 1, local))

    def __lt__(self, other: Version) -> bool:
        return self.key() < other.key()

    def __le__(self, other: Version) -> bool:
        return self.key() <= other.key()

    def __gt__(self, other: Version) -> bool:
        return self.key() > other.key()

    def __ge__(self, other: Version) -> bool:
        return self.key() >= other.key()

    def same(self, other: Version) -> bool:
        return self.key() == other.key()


def parse_version(text: str) -> Version | None:
    """The PEP 440 version ``text`` spells, or None when it spells none."""
    match = _VERSION.match(text)
    if match is None:
        return None
    pre = (_PRE[match.group("pre_l").lower()], int(match.group("pre_n") or 0)) if match.group("pre_l") else None
    post_n = match.group("post_n1") or match.group("post_n2")
    post = int(post_n or 0) if match.group("post") else None
    dev = int(match.group("dev_n") or 0) if match.group("dev_l") else None
    local = match.group("local")
    parts = tuple(int(part) if part.isdigit() else part.lower() for part in re.split(r"[-_.]", local)) if local else None
    release = tuple(int(part) for part in match.group("release").split("."))
    return Version(int(match.group("epoch") or 0), release, pre, post, dev, parts)


def same_version(left: str, right: str) -> bool:
    """PEP 440 equality: 1.0 == 1.0.0, 2.6.0+cu128 != 2.6.0+cpu; text comparison when either is no version."""
    a, b = parse_version(left), parse_version(right)
    return a.same(b) if a is not None and b is not None else left.strip() == right.strip()


# ----- specifiers (one clause: the form a marker compares with) ---------------------
_SPEC_VERSION = re.compile(r"^\s*v?(?:[0-9]+!)?[0-9]+(?:\.[0-9]+)*", re.IGNORECASE | re.ASCII)


def _valid_specifier(op: str, version: str) -> bool:
    """Whether ``op version`` is a specifier packaging accepts."""
    if op == "===":
        return bool(version) and not re.search(r"[\s;)]", version)
    if op not in ("==", "!=", "<=", ">=", "<", ">", "~="):
        return False
    if op in ("==", "!=") and version.endswith(".*"):
        return re.fullmatch(r"v?(?:[0-9]+!)?[0-9]+(?:\.[0-9]+)*\.\*", version, re.IGNORECASE | re.ASCII) is not None
    parsed = parse_version(version)
    if parsed is None or version != version.strip():
        return False
    if op in ("<=", ">=", "<", ">", "~=") and parsed.local is not None:
        return False
    return not (op == "~=" and len(parsed.release) < 2)


def _release_prefix(version: str) -> list[str]:
    """'1.2rc1' -> ['1', '2', 'rc1'] as packaging splits a version for a prefix match."""
    parsed = parse_version(version)
    assert parsed is not None
    epoch = [str(parsed.epoch)] if parsed.epoch else ["0"]
    parts = [str(part) for part in parsed.release]
    suffix = ""
    if parsed.pre is not None:
        suffix += f"{parsed.pre[0]}{parsed.pre[1]}"
    pieces = epoch + parts + ([suffix] if suffix else [])
    if parsed.post is not None:
        pieces.append(f"post{parsed.post}")
    if parsed.dev is not None:
        pieces.append(f"dev{parsed.dev}")
    return pieces


def _prefix_match(item: Version, prefix: str) -> bool:
    wanted = _release_prefix(prefix)
    got = _release_prefix(_text(item.public))
    release_wanted = [p for p in wanted[1:] if p.isdigit()]
    release_got = [p for p in got[1:] if p.isdigit()]
    width = max(len(release_wanted), len(release_got))
    padded = [got[0], *release_got, *["0"] * (width - len(release_got)), *[p for p in got[1:] if not p.isdigit()]]
    return padded[: len(wanted)] == wanted


def _text(version: Version) -> str:
    text = (f"{version.epoch}!" if version.epoch else "") + ".".join(map(str, version.release))
    if version.pre is not None:
        text += f"{version.pre[0]}{version.pre[1]}"
    if version.post is not None:
        text += f".post{version.post}"
    if version.dev is not None:
        text += f".dev{version.dev}"
    if version.local is not None:
        text += "+" + ".".join(map(str, version.local))
    return text


def specifier_contains(op: str, version: str, item: str) -> bool:
    """Whether ``item`` satisfies ``op version`` (pre-releases allowed, as markers compare)."""
    if op == "===":
        return item.lower() == version.lower()
    candidate = parse_version(item)
    if candidate is None:
        return False
    if op in ("==", "!="):
        if version.endswith(".*"):
            matched = _prefix_match(candidate, version[:-2])
        else:
            spec = parse_version(version)
            assert spec is not None
            matched = (candidate if spec.local is not None else candidate.public).same(spec)
        return matched if op == "==" else not matched
    spec = parse_version(version)
    assert spec is not None
    if op == "~=":
        prefix = ".".join(_text(spec.base).split(".")[:-1])
        return candidate.public >= spec and _prefix_match(candidate, prefix)
    if op == "<=":
        return candidate.public <= spec
    if op == ">=":
        return candidate.public >= spec
    return _exclusive(op, candidate.public, spec)


def _exclusive(op: str, candidate: Version, spec: Version) -> bool:
    """``<V`` is ``< V.dev0`` unless V is a pre-release or a post-release; ``>V`` leaves out
    V's own post-releases unless V is a dev or post-release (PEP 440, as packaging >= 26 reads it)."""
    mine, theirs = candidate.key(), spec.key()
    if mine[:2] != theirs[:2]:
        return mine < theirs if op == "<" else mine > theirs
    if op == "<":
        if spec.pre is not None or spec.dev is not None or spec.post is not None:
            return mine < theirs
        return False
    if spec.dev is not None or spec.post is not None:
        return mine > theirs
    return mine > theirs and candidate.pre != spec.pre


# ----- markers ----------------------------------------------------------------------
_TOKEN = re.compile(
    r"\s*(?:(?P<paren>[()])|(?P<op>===|==|!=|<=|>=|~=|<|>|not\s+in\b|in\b)|(?P<bool>and\b|or\b)"
    r"|(?P<string>'[^']*'|\"[^\"]*\")|(?P<name>[A-Za-z_][A-Za-z0-9_.]*))"
)


@dataclass(frozen=True)
class Variable:
    name: str


@dataclass(frozen=True)
class Compare:
    left: Variable | str
    op: str
    right: Variable | str


@dataclass(frozen=True)
class Either:
    parts: tuple[Node, ...]


@dataclass(frozen=True)
class Both:
    parts: tuple[Node, ...]


Node = Compare | Either | Both


def _tokens(marker: str) -> list[tuple[str, str]]:
    tokens, position = [], 0
    while marker[position:].strip():
        match = _TOKEN.match(marker, position)
        if match is None or match.lastgroup is None:
            raise MarkerError(f"cannot read the marker at {marker[position:].strip()[:30]!r}")
        kind = match.lastgroup
        value = match.group(kind)
        tokens.append((kind, re.sub(r"\s+", " ", value) if kind == "op" else value))
        position = match.end()
    return tokens


class _Parser:
    def __init__(self, marker: str) -> None:
        self.tokens = _tokens(marker)
        self.position = 0

    def peek(self) -> tuple[str, str]:
        return self.tokens[self.position] if self.position < len(self.tokens) else ("end", "")

    def take(self, kind: str) -> str:
        got, value = self.peek()
        if got != kind:
            raise MarkerError(f"expected {kind}, found {value or 'the end'!r}")
        self.position += 1
        return value

    def either(self) -> Node:
        parts = [self.both()]
        while self.peek() == ("bool", "or"):
            self.position += 1
            parts.append(self.both())
        return parts[0] if len(parts) == 1 else Either(tuple(parts))

    def both(self) -> Node:
        parts = [self.atom()]
        while self.peek() == ("bool", "and"):
            self.position += 1
            parts.append(self.atom())
        return parts[0] if len(parts) == 1 else Both(tuple(parts))

    def atom(self) -> Node:
        if self.peek() == ("paren", "("):
            self.position += 1
            inner = self.either()
            self.take_paren(")")
            return inner
        left = self.operand()
        op = self.take("op")
        right = self.operand()
        if isinstance(left, Variable) == isinstance(right, Variable):
            raise MarkerError("a comparison needs one variable and one quoted value")
        return Compare(left, op, right)

    def take_paren(self, which: str) -> None:
        if self.peek() != ("paren", which):
            raise MarkerError(f"expected {which!r}, found {self.peek()[1] or 'the end'!r}")
        self.position += 1

    def operand(self) -> Variable | str:
        kind, value = self.peek()
        self.position += 1
        if kind == "string":
            return value[1:-1]
        if kind == "name" and value in VARIABLES:
            return Variable(value)
        raise MarkerError(f"{value or 'the end'!r} is neither a marker variable nor a quoted value")


def parse_marker(marker: str) -> Node:
    """The marker's tree; MarkerError when it does not parse."""
    parser = _Parser(marker)
    node = parser.either()
    if parser.position != len(parser.tokens):
        raise MarkerError(f"unexpected {parser.peek()[1]!r} after the marker")
    return node


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _compare(node: Compare, environment: dict[str, str]) -> bool:
    variable = node.left if isinstance(node.left, Variable) else node.right
    assert isinstance(variable, Variable)
    if variable.name not in environment:
        raise MarkerError(f"the environment has no {variable.name}")
    left = environment[variable.name] if isinstance(node.left, Variable) else node.left
    right = environment[variable.name] if isinstance(node.right, Variable) else node.right
    assert isinstance(left, str) and isinstance(right, str)
    if variable.name == "extra":
        left, right = (_canonical(left) if left else left), (_canonical(right) if right else right)
    if variable.name in VERSION_VARIABLES and _valid_specifier(node.op, right):
        return specifier_contains(node.op, right, left)
    text_ops = {
        "in": lambda: left in right,
        "not in": lambda: left not in right,
        "<": lambda: False,  # text has no order: only equality counts (as packaging >= 26 decides)
        "<=": lambda: left == right,
        "==": lambda: left == right,
        "!=": lambda: left != right,
        ">=": lambda: left == right,
        ">": lambda: False,
    }
    if node.op not in text_ops:
        raise MarkerError(f"{node.op} has no meaning between {left!r} and {right!r}")
    return text_ops[node.op]()


def evaluate(node: Node, environment: dict[str, str]) -> bool:
    """Every comparison is evaluated (an undefined one raises even where and/or would not need it)."""
    if isinstance(node, Compare):
        return _compare(node, environment)
    results = [evaluate(part, environment) for part in node.parts]
    return any(results) if isinstance(node, Either) else all(results)


def marker_holds(marker: str, environment: dict[str, str]) -> bool:
    """Whether ``marker`` holds in ``environment`` (PEP 508 variable -> value); MarkerError when it cannot be told."""
    return evaluate(parse_marker(marker), {"extra": "", **environment})
