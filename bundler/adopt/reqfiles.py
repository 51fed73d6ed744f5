"""requirements*.txt: the project's own requirement files, read as `bundler lock` reads them.

The lock's reader (bundler/lock/requirements.py) follows ``-r`` includes inside the project
and joins continuations; what it refuses (an include outside the project, a loop) is
said here the same way. The file chosen is the one `bundler lock` will then read
through bundle.toml's ``[build] requirements``.
"""

from __future__ import annotations

import re
from pathlib import Path

from bundler.adopt.model import Dependency, SourceRead
from bundler.lock.requirements import include_target, read_lines

# The file a project installs from, first match wins; any other requirements*.txt that is
# not for development, tests or documentation comes after these.
PREFERRED = (
    "requirements.in",
    "requirements.txt",
    "requirements/requirements.txt",
    "requirements/base.txt",
    "requirements/main.txt",
    "requirements/prod.txt",
)
NOT_RUNTIME = re.compile(r"(dev|test|tests|docs?|lint|ci|style|format|typing|bench)", re.IGNORECASE)
_INDEX = re.compile(r"^(--index-url|-i|--extra-index-url|-f|--find-links)(?:\s*=\s*|\s+)(\S+)")


def candidates(root: Path) -> list[str]:
    """The project's requirement files, the one to use first."""
    found = sorted(
        {
            p.relative_to(root).as_posix()
            for p in [*root.glob("requirements*.txt"), *root.glob("requirements.in"), *root.glob("requirements/*.txt")]
            if p.is_file()
        }
    )
    preferred = [name for name in PREFERRED if name in found]
    runtime = [name for name in found if name not in preferred and not NOT_RUNTIME.search(Path(name).stem.replace("requirements", ""))]
    return preferred + runtime


def read(root: Path, name: str) -> SourceRead:
    """One requirements file with its includes: requirement lines and index lines."""
    source = SourceRead("requirements", name)
    for line in read_lines(root, name):
        where = line.where(root.resolve())
        if include_target(line) is not None:
            continue
        index = _INDEX.match(line.text)
        if index:
            source.indexes.append((index.group(2), where))
        elif line.text.startswith("-") and not line.text.startswith(("-e", "--editable")):
            source.notes.append(f"{where}: option {line.text!r} kept for the lock to judge")
        else:
            source.dependencies.append(Dependency(line.text, where))
    return source
