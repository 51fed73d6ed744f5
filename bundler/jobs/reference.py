"""The image a job runs: a registry reference (pinned by digest where the reference carries one)
or, for Slurm, an exported archive (`bundler build --export FILE.tar`) or an Apptainer .sif.

A reference is checked against the grammar registries accept, so a space, a quote or a
shell character never reaches a job file as part of an image name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from bundler.contracts.reference import ReferenceError, parse_reference
from bundler.errors import UsageError

ARCHIVE_SUFFIXES = (".tar", ".sif")


@dataclass(frozen=True)
class Image:
    given: str  # what the user passed (or the local tag of `bundler build`)
    repository: str = ""
    tag: str = ""
    digest: str = ""  # sha256:… when known
    archive: str = ""  # a .tar or .sif path (Slurm only), as given
    archive_sha256: str = ""  # from FILE.tar.sha256 beside it, when present

    @property
    def pinned(self) -> str:
        """What a node pulls: repository@digest when the digest is known, else the reference as given."""
        if self.archive:
            return self.archive
        return f"{self.repository}@{self.digest}" if self.digest else self.given

    def as_dict(self) -> dict:
        return {
            "given": self.given,
            "pinned": self.pinned,
            "digest": self.digest or None,
            "archive": self.archive or None,
            "archive_sha256": self.archive_sha256 or None,
        }


def parse_image(text: str, *, archives: bool) -> Image:
    """``text`` as an Image; UsageError naming it when it is neither a reference nor (with ``archives``) an archive path."""
    if text.lower().endswith(ARCHIVE_SUFFIXES):
        if not archives:
            raise UsageError(
                f"--image {text!r} is a file: this engine pulls its image from a registry.",
                hint="Push the image (`bundler build --push REGISTRY/NAME:TAG`) and pass --image REGISTRY/NAME:TAG, "
                "or REGISTRY/NAME@sha256:… to pin it by digest. Only `bundler job slurm` takes a .tar or .sif file.",
                value=text,
            )
        return _archive(text)
    try:
        reference = parse_reference(text)
    except ReferenceError as error:
        raise UsageError(
            f"--image {text!r} is not an image reference: {error}.",
            hint="Write it as HOST[:PORT]/NAME[:TAG][@sha256:DIGEST], lower-case name, without spaces or quotes"
            + (", or give the path of a .tar (`bundler build --export`) or .sif file." if archives else "."),
            value=text,
        ) from None
    return Image(text, reference.repository, reference.tag, reference.digest)


def _archive(text: str) -> Image:
    if any(ord(char) < 32 for char in text):
        raise UsageError(f"--image {text!r} holds a control character.", hint="Rename the file.", value=text)
    checksum = Path(text + ".sha256")
    digest = ""
    if text.lower().endswith(".tar") and checksum.is_file():
        first = checksum.read_text(encoding="utf-8", errors="replace").split()
        digest = first[0] if first and re.fullmatch(r"[0-9a-f]{64}", first[0]) else ""
    return Image(text, archive=text, archive_sha256=digest)
