"""Are two images of the same inputs the same? Layer by layer, and if not, the first file that differs.

Layers are compared by diff ID (the sha256 of the layer's tar, what a registry and
`docker load` see) and labels by value. When a layer differs, both images are streamed
from the engine (`docker save`, never held in memory or written to disk), every layer's
entries are listed (name, type, mode, owner, time, size, link target, sha256 of the
content) and the first entry that differs in the first differing layer is named, with
both values: that is where to look (a file time the build did not normalize, bytecode
that depends on the clock, a file written by a step that reads the date).
"""

from __future__ import annotations

import hashlib
import json
import tarfile
from collections.abc import Iterable
from dataclasses import dataclass, field

from bundler.engine import Engine, ImageMissing

CHUNK = 4 << 20
FIELDS = ("type", "mode", "uid", "gid", "uname", "gname", "mtime", "size", "linkname", "sha256")


@dataclass
class Comparison:
    same_layers: bool
    same_labels: bool
    layers: list = field(default_factory=list)  # [{"instruction", "first", "second"}] for every layer
    labels: dict = field(default_factory=dict)  # label -> [first, second] where they differ
    first_difference: str = ""

    @property
    def same(self) -> bool:
        return self.same_layers and self.same_labels

    def as_dict(self) -> dict:
        return {
            "reproducible": self.same,
            "same_layers": self.same_layers,
            "same_labels": self.same_labels,
            "layers": self.layers,
            "labels_differing": self.labels,
            "first_difference": self.first_difference,
        }


class _Stream:
    """A file-like ``read`` over an iterator of byte chunks."""

    def __init__(self, chunks: Iterable[bytes]) -> None:
        self._chunks = iter(chunks)
        self._buffer = bytearray()

    def read(self, size: int = -1) -> bytes:
        while size < 0 or len(self._buffer) < size:
            try:
                self._buffer += next(self._chunks)
            except StopIteration:
                break
        if size < 0:
            size = len(self._buffer)
        data = bytes(self._buffer[:size])
        del self._buffer[:size]
        return data


class _Hashing:
    """Reads through ``inner`` and hashes every byte read (the layer's diff ID)."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.digest = hashlib.sha256()

    def read(self, size: int = -1) -> bytes:
        data = self.inner.read(size)
        self.digest.update(data)
        return data


def entries(layer) -> list[tuple[str, tuple]]:
    """(name, the FIELDS values) of every entry of a layer tar read as a stream."""
    listed = []
    with tarfile.open(fileobj=layer, mode="r|") as tar:
        for member in tar:
            content = ""
            if member.isreg():
                digest, handle = hashlib.sha256(), tar.extractfile(member)
                while chunk := handle.read(CHUNK):
                    digest.update(chunk)
                content = digest.hexdigest()
            values = (member.type.decode(), oct(member.mode), member.uid, member.gid, member.uname, member.gname)
            listed.append((member.name, values + (member.mtime, member.size, member.linkname, content)))
    return listed


def saved_layers(engine: Engine, image_id: str) -> tuple[dict[str, list], dict]:
    """({diff ID: entries} of every layer, the image's config) from one streamed `docker save`.

    Docker names a layer ``<id>/layer.tar``, Podman ``<diff id>.tar``: every tar in the archive is a layer."""
    layers, config = {}, {}
    outer = tarfile.open(fileobj=_Stream(engine.save(image_id, CHUNK)), mode="r|")  # type: ignore[call-overload]  # a read() is all r| needs
    for member in outer:
        if member.name.endswith(".tar") and member.isreg():
            reader = _Hashing(outer.extractfile(member))
            listed = entries(reader)
            while reader.read(CHUNK):  # the tar's end blocks and padding belong to the diff ID too
                pass
            layers["sha256:" + reader.digest.hexdigest()] = listed
        elif member.isreg() and member.name.endswith(".json") and "/" not in member.name and member.name != "manifest.json":
            config = json.loads(outer.extractfile(member).read())
    outer.close()
    return layers, config


def layer_instructions(config: dict) -> list[str]:
    """The instruction that made each layer, in order (history entries that made no layer skipped)."""
    return [entry.get("created_by", "") for entry in config.get("history", []) if not entry.get("empty_layer")]


def first_difference(first: list, second: list) -> str:
    """The first entry that differs between two listings of a layer, with both values."""
    by_name = dict(second)
    for name, values in first:
        if name not in by_name:
            return f"/{name} is only in the first build"
        if by_name[name] != values:
            other = by_name[name]
            diffs = [f"{key} {a!r} vs {b!r}" for key, a, b in zip(FIELDS, values, other, strict=True) if a != b]
            return f"/{name}: " + ", ".join(diffs)
    only = [name for name, _ in second if name not in dict(first)]
    return f"/{only[0]} is only in the second build" if only else "the same entries in another order"


def compare(engine: Engine, first_id: str, second_id: str) -> Comparison:
    """Layer diff IDs and labels of two images; the first differing file when a layer differs.

    The labels an engine's builder adds by itself (Podman's ``io.buildah.version``) are not the
    build's: they say which builder ran, and are left out of the comparison."""
    first, second = engine.image(first_id), engine.image(second_id)
    if first is None or second is None:
        raise ImageMissing(f"{first_id if first is None else second_id} is not on the engine", engine=engine.label)
    a_layers, b_layers = list(first.layers), list(second.layers)
    a_labels, b_labels = dict(first.labels), dict(second.labels)
    labels = {
        key: [a_labels.get(key), b_labels.get(key)]
        for key in sorted(set(a_labels) | set(b_labels))
        if a_labels.get(key) != b_labels.get(key) and key not in engine.added_labels
    }
    result = Comparison(a_layers == b_layers, not labels, labels=labels)
    if result.same_layers:
        result.layers = [{"first": diff, "second": diff} for diff in a_layers]
        return result
    a_saved, a_config = saved_layers(engine, first_id)
    b_saved, _ = saved_layers(engine, second_id)
    instructions = layer_instructions(a_config)
    for index, (a, b) in enumerate(zip(a_layers, b_layers, strict=False)):
        instruction = instructions[index] if index < len(instructions) else ""
        result.layers.append({"instruction": instruction[:160], "first": a, "second": b})
        if a != b and not result.first_difference:
            what = first_difference(a_saved.get(a, []), b_saved.get(b, []))
            result.first_difference = f"layer {index + 1} of {len(a_layers)} ({instruction[:100].strip()}): {what}"
    if len(a_layers) != len(b_layers) and not result.first_difference:
        result.first_difference = f"the first build has {len(a_layers)} layers, the second {len(b_layers)}"
    return result
