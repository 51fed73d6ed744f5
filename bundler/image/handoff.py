"""Getting a built image to the rented box: `--export FILE.tar` and `--push REF`.

Export streams `docker save` into ``FILE.tar.partial`` in 4 MiB chunks while hashing it
(memory stays flat whatever the image's size), writes ``FILE.tar.sha256`` (sha256sum
format) and only then renames the tar into place; any write error (a full disk above
all) removes the partial file and is a BuildError, so a FILE.tar that exists is always
whole. Push tags the image as REF and pushes it, counting the layers sent and those the
registry had already (after a code-only change, only the code layer is sent); an error
anywhere in the engine's push stream is a BuildError and the tag made for the push is
removed again.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bundler.contracts.reference import ReferenceError, parse_reference
from bundler.engine import Engine, EngineFailure
from bundler.errors import BuildError, UsageError
from bundler.fsutil import atomic_write_text

CHUNK = 4 << 20


@dataclass(frozen=True)
class ExportResult:
    path: Path
    sha256: str
    size: int
    sha256_path: Path

    @property
    def load_command(self) -> str:
        return f"sha256sum -c {_argument(self.sha256_path.name)} && docker load -i {_argument(self.path.name)}"

    def as_dict(self) -> dict:
        return {
            "path": str(self.path),
            "sha256": self.sha256,
            "bytes": self.size,
            "sha256_file": str(self.sha256_path),
            "load_command": self.load_command,
        }


def export(
    engine: Engine, image: str, dest: Path, *, names: list[str] | None = None, opener=open, say: Callable[[str], None] = lambda text: None
) -> ExportResult:
    """`docker save` of ``image`` (with its tags ``names``) into ``dest`` with a sha256 beside it."""
    dest = Path(dest).expanduser().absolute()
    if dest.is_dir():
        raise UsageError(
            f"--export {dest} is a folder; give a file name such as {dest / 'image.tar'}.", hint="Name the .tar file to write.", path=dest
        )
    if not dest.parent.is_dir():
        raise UsageError(
            f"--export {dest}: the folder {dest.parent} does not exist.", hint="Create the folder first, or export elsewhere.", path=dest
        )
    partial = dest.with_name(dest.name + ".partial")
    sha_path = dest.with_name(dest.name + ".sha256")
    digest, size = hashlib.sha256(), 0
    say(f"Exporting {names[0] if names else image} to {dest}…")
    try:
        stream = engine.save(names[0] if names else image, CHUNK)
        with opener(partial, "wb") as handle:
            for chunk in stream:
                handle.write(chunk)
                digest.update(chunk)
                size += len(chunk)
            handle.flush()
            os.fsync(handle.fileno())
        atomic_write_text(sha_path, f"{digest.hexdigest()}  {dest.name}\n")
        os.replace(partial, dest)
    except OSError as error:
        with contextlib.suppress(FileNotFoundError):
            partial.unlink()
        full = error.errno in (errno.ENOSPC, errno.EDQUOT)
        raise BuildError(
            f"exporting the image to {dest} failed after {size / 1e6:.1f} MB: "
            + ("the disk is full" if full else (error.strerror or str(error)))
            + f". No partial file was left at {partial}.",
            hint=(
                "Free space on that disk (the image needs about its size in the table above) or export to another disk."
                if full
                else "Check the destination folder is writable, then export again."
            ),
            path=dest,
        ) from None
    except EngineFailure as error:  # the engine stopped the stream
        with contextlib.suppress(FileNotFoundError):
            partial.unlink()
        raise BuildError(
            f"the engine could not save {image}: {error.explanation[:300]}.", hint="Check the image exists (`docker images`).", path=dest
        ) from None
    return ExportResult(dest, digest.hexdigest(), size, sha_path)


@dataclass(frozen=True)
class PushResult:
    reference: str
    digest: str
    layers_sent: int = 0  # layers the registry did not have
    layers_present: int = 0  # layers it had already (a code-only change sends one)
    bytes_sent: int = 0  # of the layers sent, as the engine counts them

    def as_dict(self) -> dict:
        return {
            "reference": self.reference,
            "digest": self.digest,
            "pull_command": f"docker pull {shlex.quote(self.reference)}",
            "layers_sent": self.layers_sent,
            "layers_present": self.layers_present,
            "bytes_sent": self.bytes_sent,
        }


def split_reference(reference: str, flag: str = "--push") -> tuple[str, str]:
    """'host:5000/team/app:1' -> ('host:5000/team/app', '1'); no tag means 'latest'.
    A UsageError names ``flag``, the option the reference came from."""
    if "@" in reference:
        raise UsageError(
            f"{flag} {reference}: tag an image, not a digest.", hint=f"For example {flag} registry.example.com/team/app:1.", value=reference
        )
    try:
        parsed = parse_reference(reference)
    except ReferenceError as error:
        raise UsageError(
            f"{flag} {reference!r} is not a valid image reference: {error}.",
            hint=f"Write it as HOST[:PORT]/NAME[:TAG] with a lower-case name, e.g. {flag} registry.example.com/team/app:1.",
            value=reference,
        ) from None
    return parsed.repository, parsed.tag or "latest"


def push(
    engine: Engine, image_id: str, reference: str, *, keep_tag: bool = False, say: Callable[[str], None] = lambda text: None
) -> PushResult:
    """Tag ``image_id`` as ``reference`` and push it; BuildError on any error in the stream."""
    repository, tag = split_reference(reference)
    full = f"{repository}:{tag}"
    engine.tag(image_id, repository, tag)
    say(f"Pushing {full}…")
    digest, failure = "", ""
    layers: dict[str, str] = {}
    sent: dict[str, int] = {}
    try:
        for event in engine.push(repository, tag):
            if event.error:
                failure = event.error
                break
            digest = event.digest or digest
            if event.layer and event.status:
                layers[event.layer] = event.status
                sent[event.layer] = max(sent.get(event.layer, 0), event.current)
            if event.status and not event.layer:
                say(f"  {event.status}")
    except EngineFailure as error:  # the engine refused, or the connection to it broke
        failure = error.explanation
    if failure:
        if not keep_tag:
            with contextlib.suppress(EngineFailure):
                engine.remove_image(full, prune=False)
        raise BuildError(
            f"pushing {full} failed: {str(failure).strip()[:400]}.",
            hint="Check the registry address and that you may push there (`docker login HOST`); a plain-HTTP registry must be on "
            "127.0.0.0/8 or listed in the engine's insecure-registries. The image itself is built and kept.",
            value=full,
        )
    pushed = [layer for layer, status in layers.items() if status == "Pushed"]
    present = [layer for layer, status in layers.items() if status.startswith(("Layer already exists", "Mounted from"))]
    return PushResult(full, digest, len(pushed), len(present), sum(sent.get(layer, 0) for layer in pushed))


def _argument(name: str) -> str:
    """``name`` quoted for a shell, and never read as an option (``-x.tar`` becomes ``./-x.tar``)."""
    return shlex.quote(f"./{name}" if name.startswith("-") else name)
