"""The immutable pilot input: the manifest, its hashes, and which documents are accepted."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from .config import PilotConfig
from .errors import InputError


@dataclass(frozen=True)
class Document:
    id: str
    file: str
    label: str | None
    expect: str
    text: str | None = None
    reason: str | None = None

    @property
    def accepted(self) -> bool:
        return self.reason is None


def manifest_sha256(config: PilotConfig) -> str:
    return hashlib.sha256(config.manifest.read_bytes()).hexdigest()


def load_documents(config: PilotConfig) -> list[Document]:
    """Every document of the manifest, checked against its hash, with a reason if rejected."""
    entries = _manifest_entries(config)
    _check_folder(config, entries)
    limits = config.section("limits")
    return [_read(config, entry, limits) for entry in entries]


def _manifest_entries(config: PilotConfig) -> list[dict]:
    if not config.data_dir.is_dir():
        raise InputError(f"data folder {config.data_dir} not found.", "Restore data/pilot/ from the project archive; the pilot never runs on a partial input.")
    if not config.manifest.is_file():
        raise InputError(f"input manifest {config.manifest} not found.", "The manifest lists every document with its SHA-256; restore it with the data.")
    try:
        entries = json.loads(config.manifest.read_text(encoding="utf-8"))["documents"]
    except (json.JSONDecodeError, KeyError, TypeError, UnicodeDecodeError) as error:
        raise InputError(f"{config.manifest} is not a valid input manifest ({error}).", 'It must be a JSON object with a "documents" list.') from None
    seen: set[str] = set()
    for entry in entries:
        if not isinstance(entry, dict) or not {"id", "file", "sha256"} <= set(entry):
            raise InputError(f"{config.manifest}: entry {entry!r} lacks id, file or sha256.", "Each document needs all three.")
        if entry["id"] in seen:
            raise InputError(f"{config.manifest}: document ID {entry['id']!r} appears twice.", "Every document needs a unique ID; rename one and record its new hash.")
        seen.add(entry["id"])
    if len(entries) != config.expected_documents:
        raise InputError(
            f"{config.manifest} lists {len(entries)} documents, the configuration expects {config.expected_documents}.",
            "Fix expected_documents or restore the missing documents.",
        )
    return entries


def _check_folder(config: PilotConfig, entries: list[dict]) -> None:
    listed = {entry["file"] for entry in entries} | {config.manifest.name}
    unlisted = sorted(p.name for p in config.data_dir.iterdir() if p.is_file() and p.name not in listed and not p.name.startswith("."))
    if unlisted:
        raise InputError(
            f"{config.data_dir} holds files the manifest does not list: {', '.join(unlisted)}.",
            "The pilot input is immutable: remove them, or add them to the manifest with their hash as a new input version.",
        )


def _read(config: PilotConfig, entry: dict, limits: dict) -> Document:
    path = config.data_dir / entry["file"]
    if not path.is_file():
        raise InputError(f"document {entry['id']} ({path}) is missing.", "Restore it; nothing may be silently lost.")
    data = path.read_bytes()
    actual = hashlib.sha256(data).hexdigest()
    if actual != entry["sha256"]:
        raise InputError(
            f"document {entry['id']} ({path}) was modified: SHA-256 {actual[:12]}… differs from the manifest's {entry['sha256'][:12]}….",
            "The pilot input is immutable: restore the original file, or record a new input version with its new hash.",
        )
    base = Document(id=entry["id"], file=entry["file"], label=entry.get("label"), expect=entry.get("expect", "accept"))
    text, reason = _decode(data, limits)
    return Document(**{**base.__dict__, "text": text, "reason": reason})


def _decode(data: bytes, limits: dict) -> tuple[str | None, str | None]:
    if not data:
        return None, "empty file (0 bytes)"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        return None, f"not UTF-8 text: invalid byte 0x{data[error.start]:02x} at offset {error.start}"
    length = len(text.strip())
    if length < int(limits.get("min_chars", 1)):
        return None, f"too short: {length} characters, at least {limits.get('min_chars')} required"
    if "max_chars" in limits and length > int(limits["max_chars"]):
        return None, f"too long: {length} characters, at most {limits['max_chars']} allowed"
    return text, None
