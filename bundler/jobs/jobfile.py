"""A job file on disk: a header that records where it came from, and no user edit lost.

The header is comment lines (valid in YAML and in shell): the command, the lock's sha256,
the image, the Target, the order and the sha256 of the body below it. A file already at
the destination is replaced only when `bundler job` wrote it and nobody edited it since
(its body still matches the recorded sha256); anything else is refused, never overwritten.
"""

from __future__ import annotations

import re
from pathlib import Path

from bundler.contracts.oneline import safe_line
from bundler.errors import ExistsError, UsageError
from bundler.fsutil import atomic_write_text, sha256_bytes

_FIELD = re.compile(r"^# ([a-z0-9-]+): (.*)$")
_TITLE = "# Written by `bundler job "


def compose(engine: str, record: dict, body: str, *, shebang: str = "") -> str:
    """The file's text: optional shebang, the header recording ``record``, then ``body``."""
    lines = [shebang] if shebang else []
    lines.append(f"{_TITLE}{engine}`: regenerate it with that command rather than edit it by hand.")
    fields = {"bundler-job": engine, **record, "body-sha256": sha256_bytes(body.encode("utf-8"))}
    lines += [f"# {key}: {safe_line(str(value))}" for key, value in fields.items()]  # every Unicode line break counts
    return "\n".join(lines) + "\n" + body


def split(text: str) -> tuple[dict[str, str], str]:
    """(header fields, body) of a job file."""
    lines = text.splitlines(keepends=True)
    index = 1 if lines and lines[0].startswith("#!") else 0
    index += 1 if index < len(lines) and lines[index].startswith(_TITLE) else 0
    fields: dict[str, str] = {}
    while index < len(lines) and (match := _FIELD.match(lines[index].rstrip("\n"))):  # the body may start with comments (#SBATCH)
        fields[match.group(1)] = match.group(2)
        index += 1
    return fields, "".join(lines[index:])


def write(path: Path, text: str) -> bool:
    """Write ``text`` to ``path`` atomically; False when it already held exactly that."""
    path = Path(path)
    if path.is_dir():
        raise UsageError(f"-o {path} is a folder.", hint=f"Name the file to write, e.g. {path / 'job.yaml'}.", path=path, value=str(path))
    if path.is_file() or path.is_symlink():
        old = _replaceable(path)
        if old == text:
            return False
    atomic_write_text(path, text)
    return True


def _replaceable(path: Path) -> str:
    """The current text of ``path``, when it is an unedited job file; ExistsError otherwise."""
    try:
        text = path.read_text(encoding="utf-8")
    except (UnicodeDecodeError, OSError):
        text = ""
    fields, body = split(text)
    if "bundler-job" not in fields:
        reason = "is not a file `bundler job` wrote"
    elif fields.get("body-sha256") != sha256_bytes(body.encode("utf-8")):
        reason = "was edited after `bundler job` wrote it"
    else:
        return text
    raise ExistsError(
        f"{path} exists and {reason}: it is left as it is.",
        hint="Name another file with -o, or move that one away first (bundler never overwrites a file it did not write).",
        path=path,
    )


def yaml_text(*documents: dict) -> str:
    """YAML through PyYAML's safe dumper; multi-line strings (scripts) as literal blocks when YAML allows."""
    import yaml

    class Dumper(yaml.SafeDumper):
        def ignore_aliases(self, data) -> bool:  # a shared dict is written out twice, never as &anchor / *alias
            return True

    def text(dumper, value: str):
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|" if "\n" in value else None)

    Dumper.add_representer(str, text)
    return yaml.dump_all(documents, Dumper=Dumper, sort_keys=False, default_flow_style=False, allow_unicode=True)
