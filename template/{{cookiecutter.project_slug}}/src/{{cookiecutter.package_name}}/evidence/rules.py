"""Stop rules, declared in config/pilot.json before the trial ("stop_rules").

    non_finite_loss            a training loss is NaN or infinite
    quality_below_threshold    accuracy on the labelled check set < min_accuracy
    essential_input_missing    an input document vanished during the run
    checkpoint_not_reloadable  the checkpoint does not reload in a fresh process

A rule left out is off. When one fires, the run stops, keeps its ID, and summary.json
records ``stopped: {rule, reason, at}``; the pilot exits with 6.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .errors import ConfigError, StoppedError


@dataclass(frozen=True)
class StopRules:
    non_finite_loss: bool = False
    essential_input_missing: bool = False
    checkpoint_not_reloadable: bool = False
    min_accuracy: float | None = None
    check_set: list[str] | str = "labelled"

    @classmethod
    def from_config(cls, raw: dict) -> StopRules:
        """From a configuration config.load_config has already checked."""
        section = dict(raw.get("stop_rules", {}))
        quality = section.pop("quality_below_threshold", False) or {}
        return cls(**section, min_accuracy=quality.get("min_accuracy"), check_set=quality.get("check_set", "labelled"))

    def check_loss(self, step: int, loss: float) -> None:
        if self.non_finite_loss and not math.isfinite(loss):
            raise StoppedError("non_finite_loss", f"training loss is {loss} at step {step}.", f"training step {step}")

    def check_quality(self, correct: int, total: int) -> None:
        if total == 0:
            raise StoppedError(
                "quality_below_threshold", "the check set holds no labelled accepted document: quality cannot be measured.", "quality check"
            )
        if correct / total < self.min_accuracy:
            reason = f"accuracy {correct / total:.3f} ({correct}/{total}) on the check set is below the declared {self.min_accuracy}."
            raise StoppedError("quality_below_threshold", reason, "quality check")

    def check_set_ids(self, documents, categories: list[str]) -> list[str]:
        """IDs the quality rule measures: labelled, accepted documents (validated against the input)."""
        if self.check_set == "labelled":
            return [d.id for d in documents if d.accepted and d.label in categories]
        by_id = {d.id: d for d in documents}
        unknown = [i for i in self.check_set if i not in by_id]
        if unknown:
            raise ConfigError(
                f"stop_rules.quality_below_threshold.check_set names {unknown[0]!r}, which the input manifest does not list.",
                "List IDs of labelled pilot documents.",
            )
        unlabelled = [i for i in self.check_set if by_id[i].label not in categories]
        if unlabelled:
            raise ConfigError(
                f"check set document {unlabelled[0]} has no label among the categories.", "The check set holds labelled documents only."
            )
        return [i for i in self.check_set if by_id[i].accepted]
