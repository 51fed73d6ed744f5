"""The two steps every job runs on every node, both through torchrun with the engine's own
node variables:

1. the diagnostics, one process per node: every stage runs on each node, and stage 10
   (collectives) takes part in one all-reduce among the nodes; a node that never joins
   fails it within BUNDLE_DIAG_JOIN_TIMEOUT seconds. A failure ends the job here.
2. the project's entry (bundle.toml [project] entry), one process per card.

Commands are lists of tokens: a ``str`` is a literal (shell-quoted, or escaped for
Kubernetes), a ``Var`` a value the engine fills in at run time.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Union

from bundler.errors import ProjectFileError
from bundler.image import layout

TORCHRUN = f"{layout.VENV}/bin/torchrun"
ENTRY_PORT = 29500
DIAGNOSTICS_PORT = 29501
_PYTHON = re.compile(r"^(?:.*/)?python(?:3(?:\.[0-9]+)?)?$")
_ASSIGNMENT = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.S)


@dataclass(frozen=True)
class Var:
    """An environment variable the engine sets on each node (SKYPILOT_NODE_RANK, SLURM_NNODES…)."""

    name: str


Token = Union[str, Var]


@dataclass(frozen=True)
class Entry:
    env: tuple[tuple[str, str], ...]  # leading NAME=VALUE words of the entry
    args: tuple[str, ...]  # what follows torchrun's own options


def static_rendezvous(nnodes: Token, nproc: Token, node_rank: Token, master: Token, port: int) -> list[Token]:
    """torchrun's options when the engine numbers the nodes (SkyPilot, Kubernetes)."""
    options = ["--nnodes", nnodes, "--nproc-per-node", nproc, "--node-rank", node_rank, "--master-addr", master, "--master-port", str(port)]
    return [TORCHRUN, *options]


def c10d_rendezvous(nnodes: Token, nproc: Token, endpoint: Token, run_id: Token) -> list[Token]:
    """torchrun's options when the nodes find each other at an endpoint (Slurm: the first host)."""
    options = ["--nnodes", nnodes, "--nproc-per-node", nproc, "--rdzv-backend", "c10d", "--rdzv-endpoint", endpoint, "--rdzv-id", run_id]
    return [TORCHRUN, *options]


def diagnostics_args() -> list[Token]:
    """The diagnostics shipped in the image, judging the project shipped beside them."""
    return [f"{layout.DIAGNOSTICS}/run.py", "--project", layout.PROJECT]


def entry(bundle) -> Entry:
    """bundle.toml's entry as torchrun runs it: `python -m M …` becomes `-m M …`, `python S.py …` becomes
    `S.py …`, anything else runs as given (--no-python); leading NAME=VALUE words become the environment."""
    try:
        words = shlex.split(bundle.entry)
    except ValueError as error:
        raise ProjectFileError(
            f"{bundle.path}: [project] entry {bundle.entry!r} does not parse as a command ({error}).",
            hint='Write it as a shell command line, e.g. entry = "python -m mypackage.train --config config/train.json".',
            path=bundle.path,
            value=bundle.entry,
        ) from None
    env = []
    while words and (assignment := _ASSIGNMENT.match(words[0])) is not None:
        words.pop(0)
        name, value = assignment.groups()
        env.append((name, value))
    if not words:
        raise ProjectFileError(
            f"{bundle.path}: [project] entry {bundle.entry!r} names no command.",
            hint='For example entry = "python -m mypackage.train".',
            path=bundle.path,
            value=bundle.entry,
        )
    if _PYTHON.match(words[0]) and len(words) >= 3 and words[1] == "-m":
        return Entry(tuple(env), ("-m", *words[2:]))
    if _PYTHON.match(words[0]) and len(words) >= 2 and not words[1].startswith("-"):
        return Entry(tuple(env), tuple(words[1:]))
    return Entry(tuple(env), ("--no-python", *words))


def shell(tokens: Sequence[Token]) -> str:
    """One shell command line: literals quoted, variables expanded inside double quotes."""
    return " ".join(f'"${{{token.name}}}"' if isinstance(token, Var) else shlex.quote(token) for token in tokens)


def exports(env: tuple[tuple[str, str], ...]) -> list[str]:
    """The entry's NAME=VALUE words as shell export lines (names were matched as identifiers)."""
    return [f"export {name}={shlex.quote(value)}" for name, value in env]
