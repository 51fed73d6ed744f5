"""The immutable pilot input: the manifest, its hashes, and which documents are accepted.

data/pilot/MANIFEST.json holds {"version", "description", "documents": [...]}; each
document has id, file (a name in data_dir), sha256 and optionally bytes, label, expect
("accept" or "reject") and reason (why a rejection is planned). Any other key, a file outside data_dir, a file the manifest
does not list or one that differs from its hash is refused before a run starts (exit 3).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, replace

from .config import PilotConfig
from .errors import InputError

MANIFEST_KEYS = {"version", "description", "documents"}
ENTRY_KEYS = {"id", "file", "sha256", "bytes", "label", "expect", "reason"}
SHA256_RE = re.compile(r"^[0-9a-f]{64}$")


@dataclass(frozen=True)
class Document:
    id: str
    file: str
    sha256: str
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
    documents = [_entry(config, entry) for entry in _manifest_entries(config)]
    seen: set[str] = set()
    for document in documents:
        if document.id in seen:
            raise InputError(f"{config.manifest}: document ID {document.id!r} appears twice.", "Every document needs a unique ID.")
        seen.add(document.id)
    if len(documents) != config.raw["expected_documents"]:
        raise InputError(
            f"{config.manifest} lists {len(documents)} documents, the configuration expects {config.raw['expected_documents']}.",
            "Fix expected_documents or restore the missing documents.",
        )
    listed = {d.file for d in documents} | {config.manifest.name}
    unlisted = sorted(p.name for p in config.data_dir.iterdir() if p.is_file() and p.name not in listed and not p.name.startswith("."))
    if unlisted:
        raise InputError(
            f"{config.data_dir} holds files the manifest does not list: {', '.join(unlisted)}.",
            "The pilot input is immutable: remove them, or add them to the manifest with their hash as a new input version.",
        )
    return [_read(config, document) for document in documents]


def _manifest_entries(config: PilotConfig) -> list:
    if not config.data_dir.is_dir():
        raise InputError(
            f"data folder {config.data_dir} not found.", "Restore it from the project archive; the pilot never runs on a partial input."
        )
    if not config.manifest.is_file():
        raise InputError(
            f"input manifest {config.manifest} not found.", "It lists every document with its SHA-256; restore it with the data."
        )
    try:
        manifest = json.loads(config.manifest.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as error:
        raise InputError(f"{config.manifest} is not valid JSON ({error}).", "Restore it from the project archive.") from None
    if not isinstance(manifest, dict) or not isinstance(manifest.get("documents"), list) or set(manifest) - MANIFEST_KEYS:
        raise InputError(
            f"{config.manifest} is not an input manifest.", f"It is an object with the keys {', '.join(sorted(MANIFEST_KEYS))}."
        )
    return manifest["documents"]


def _entry(config: PilotConfig, entry: object) -> Document:
    where = f"{config.manifest}: " + (f"document {entry.get('id', '?')}" if isinstance(entry, dict) else f"entry {entry!r}")
    if not isinstance(entry, dict) or not {"id", "file", "sha256"} <= set(entry) or set(entry) - ENTRY_KEYS:
        raise InputError(f"{where} must hold id, file and sha256 (and may hold bytes, label, expect, reason).", "No other key is allowed.")
    file, expect = entry["file"], entry.get("expect", "accept")
    if not isinstance(file, str) or file in ("", ".", "..") or "/" in file or "\\" in file:
        raise InputError(f"{where}: file {file!r} is not a file name in {config.data_dir}.", "Documents lie in data_dir itself.")
    label = entry.get("label")
    if not (
        isinstance(entry["id"], str) and entry["id"] and SHA256_RE.match(str(entry["sha256"])) and isinstance(label, (str, type(None)))
    ):
        raise InputError(f"{where}: id and label must be text, sha256 64 hex digits.", "Fix that entry.")
    if expect not in ("accept", "reject"):
        raise InputError(f"{where}: expect = {expect!r} is neither accept nor reject.", "Fix that entry.")
    return Document(id=entry["id"], file=file, sha256=entry["sha256"], label=label, expect=expect)


def _read(config: PilotConfig, document: Document) -> Document:
    path = config.data_dir / document.file
    if not path.is_file():
        raise InputError(f"document {document.id} ({path}) is missing.", "Restore it; nothing may be silently lost.")
    data = path.read_bytes()
    actual = hashlib.sha256(data).hexdigest()
    if actual != document.sha256:
        raise InputError(
            f"document {document.id} ({path}) was modified: SHA-256 {actual[:12]}… differs from the manifest's {document.sha256[:12]}….",
            "The pilot input is immutable: restore the original file, or record a new input version with its new hash.",
        )
    text, reason = _decode(data, config.raw["limits"])
    return replace(document, text=text, reason=reason)


def _decode(data: bytes, limits: dict) -> tuple[str | None, str | None]:
    if not data:
        return None, "empty file (0 bytes)"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        return None, f"not UTF-8 text: invalid byte 0x{data[error.start]:02x} at offset {error.start}"
    length = len(text.strip())
    if length < limits["min_chars"]:
        return None, f"too short: {length} characters, at least {limits['min_chars']} required"
    if length > limits["max_chars"]:
        return None, f"too long: {length} characters, at most {limits['max_chars']} allowed"
    return text, None
