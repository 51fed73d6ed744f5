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

from bundler.engine import Engine, EngineFailure
from bundler.engine.base import Lines

# Docker: "Step 2/5 : RUN …" then " ---> 1a2b3c4d5e6f"; Podman: "[1/2] STEP 2/5: RUN …" then "--> 1a2b3c4d5e6"
_STEP = re.compile(r"^(?:\[\d+/\d+\] )?(?:Step|STEP) \d+/\d+ ?: (\S+)")
_IMAGE = re.compile(r"^\s*-{2,3}> ([0-9a-f]{11,64})$")


class StageRecorder:
    """Wraps a progress display; remembers the image each build step produced."""

    def __init__(self, progress: Lines) -> None:
        self._progress = progress
        self._instruction = ""
        self.images: list[str] = []  # step images, in build order, FROM steps left out

    def __call__(self, text: str) -> None:
        step = _STEP.match(text)
        if step:
            self._instruction = step.group(1).upper()
        image = _IMAGE.match(text.strip("\n").rstrip())
        if image and self._instruction != "FROM":
            self.images.append(image.group(1))
        self._progress(text)


def remove_leftovers(engine: Engine, recorder: StageRecorder, result_id: str | None) -> list[str]:
    """Remove the recorded step images that ``result_id`` does not stand on; their IDs."""
    keep = set()
    if result_id:
        try:
            keep = {entry.image_id for entry in engine.history(result_id) if entry.image_id.startswith("sha256:")}
        except EngineFailure:
            return []
    removed = []
    for short in reversed(recorder.images):
        try:
            image = engine.image(short)
        except EngineFailure:
            continue
        if image is None or image.id in keep or image.id == result_id or image.tags or image.digests:
            continue
        try:
            engine.remove_image(image.id)
            removed.append(image.id)
        except EngineFailure:
            continue  # another image stands on it, or a container uses it
    return removed
