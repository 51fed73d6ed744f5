"""What a build leaves behind that nothing needs: the images of a multi-stage build's
throw-away stages.

The classic builder keeps an image per step of every stage; the dependency image's
``install`` stage holds the wheelhouse and a second copy of the environment (2–4 GB for
a CUDA lock), and no tag or later image refers to it. A ``StageRecorder`` passes the
build's output on and notes each step's image; afterwards the images that are not
ancestors of the result, not the ``FROM`` of a stage, and carry no tag or digest are
removed (their untagged parents with them). A failed build's leftovers go the same way.
"""

from __future__ import annotations

import re

_STEP = re.compile(r"^Step \d+/\d+ : (\S+)")
_IMAGE = re.compile(r"^ ---> ([0-9a-f]{12,64})$")


class StageRecorder:
    """Wraps a progress display; remembers the image each build step produced."""

    def __init__(self, progress) -> None:
        self._progress = progress
        self._instruction = ""
        self.images: list[str] = []  # step images, in build order, FROM steps left out

    def line(self, text: str) -> None:
        step = _STEP.match(text)
        if step:
            self._instruction = step.group(1).upper()
        image = _IMAGE.match(text.strip("\n").rstrip())
        if image and self._instruction != "FROM":
            self.images.append(image.group(1))
        self._progress.line(text)


def remove_leftovers(engine, recorder: StageRecorder, result_id: str | None) -> list[str]:
    """Remove the recorded step images that ``result_id`` does not stand on; their IDs."""
    import docker.errors

    keep = set()
    if result_id:
        try:
            keep = {entry["Id"] for entry in engine.api.history(result_id) if entry.get("Id", "").startswith("sha256:")}
        except docker.errors.APIError:
            return []
    removed = []
    for short in reversed(recorder.images):
        try:
            image = engine.images.get(short)
        except docker.errors.ImageNotFound:
            continue
        if image.id in keep or image.id == result_id or image.tags or image.attrs.get("RepoDigests"):
            continue
        try:
            engine.api.remove_image(image.id, noprune=False)
            removed.append(image.id)
        except docker.errors.APIError:
            continue  # another image stands on it, or a container uses it
    return removed
