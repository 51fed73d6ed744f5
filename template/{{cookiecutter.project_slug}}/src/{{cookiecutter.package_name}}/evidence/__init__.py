"""The evidence layer: turns the model of ../model.py into runs/<id>/, a folder of evidence.

You edit model.py, pilot.py and config/pilot.json; nothing here needs editing. For any
model that keeps the contract below, a run of `python -m <package>.pilot` guarantees:

- config/pilot.json is checked key by key (type, range, no unknown key) and the input
  against its manifest (SHA-256 of each file, nothing unlisted) before a run folder exists;
- every input ID ends up exactly once in predictions.jsonl or rejections.jsonl, and the
  rejections are the planned ones;
- a kill at any point leaves a run that `--resume ID` completes with the outputs of an
  uninterrupted run; a changed configuration or input is refused and the run kept as it is;
- the stop rules declared in config/pilot.json stop the run and keep its reason;
- the checkpoint reloads in a fresh process, and a copy of the run folder re-predicts every
  accepted document without the project: `python runs/<id>/reload.py runs/<id>`.

Modules: command (the command line, exit codes in errors), config (config/pilot.json),
inputs (the immutable input), store (the files of a run), rules (stop rules), record
(what a run records), trial (one run from start or resume to its summary), reload (the
stand-alone reload copied into every run).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from .command import run_pilot


class Model(Protocol):
    """What the evidence layer asks of a model."""

    def fit(self, texts: list[str], labels: list[int], on_step: Callable[[int, float], None]) -> None:
        """Train on the labelled accepted documents (a label is an index into the categories).
        Call ``on_step(step, loss)`` once each step's loss is known: the stop rules raise from it."""

    def predict(self, text: str) -> tuple[int, float]:
        """One document: the index of its category and a score in [0, 1]. The same text must give
        the same numbers in every process: a resumed run and every reload compare them."""

    def state(self) -> dict:
        """Everything ``restore`` needs, as tensors and plain values (it is loaded with weights_only=True)."""


class ModelModule(Protocol):
    """model.py itself. It is copied into every run folder, so it imports only torch and the standard library."""

    def create(self, categories: list[str], parameters: dict) -> Model:
        """A new, seeded, untrained model; ``parameters`` holds the sections pilot.py's PARAMETERS names."""

    def restore(self, state: dict) -> Model:
        """The model whose ``state()`` was saved."""


__all__ = ["Model", "ModelModule", "run_pilot"]
