"""Docker's `.dockerignore` matching, as the Docker CLI does it (docker-py's own implementation).

Not a call to the engine, but the SDK's code: it lives here so that only this package
imports the SDK.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence


def matcher(patterns: Sequence[str]) -> Callable[[str], bool]:
    """Whether one path (relative, posix) matches the patterns; the last matching pattern wins."""
    return _compiled(tuple(patterns))


@functools.lru_cache(maxsize=16)
def _compiled(patterns: tuple[str, ...]) -> Callable[[str], bool]:  # a project's files are matched against the same few lists
    from docker.utils.build import PatternMatcher

    return PatternMatcher(list(patterns)).matches


def kept_paths(root: str, patterns: Sequence[str], *, ignore_file: str) -> set[str]:
    """The relative paths under ``root`` that the patterns keep in a context (``ignore_file`` itself kept)."""
    from docker.utils.build import exclude_paths

    return set(exclude_paths(root, list(patterns), dockerfile=ignore_file))
