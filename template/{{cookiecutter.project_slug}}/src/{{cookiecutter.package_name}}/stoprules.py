"""Stop rules, declared in config/pilot.json before the trial ("stop_rules").

    non_finite_loss            a training loss is NaN or infinite
    quality_below_threshold    accuracy on the labelled check set < min_accuracy
    essential_input_missing    an input document vanished or changed during the run
    checkpoint_not_reloadable  the checkpoint does not reload in a fresh process

A rule left out of the section is off. When one fires, the run stops, keeps its ID, and
summary.json records ``stopped: {rule, reason, at}``; the pilot exits with 6.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from .errors import ConfigError, StoppedError

RULES = ("non_finite_loss", "quality_below_threshold", "essential_input_missing", "checkpoint_not_reloadable")


@dataclass(frozen=True)
class StopRules:
    non_finite_loss: bool = False
    essential_input_missing: bool = False
    checkpoint_not_reloadable: bool = False
    min_accuracy: float | None = None
    check_set: list[str] | str = field(default="labelled")

    def check_loss(self, step: int, loss: float) -> None:
        if self.non_finite_loss and not math.isfinite(loss):
            raise StoppedError("non_finite_loss", f"training loss is {loss} at step {step}.", f"training step {step}")

    def check_quality(self, correct: int, total: int) -> None:
        if self.min_accuracy is None:
            return
        if total == 0:
            raise StoppedError("quality_below_threshold", "the check set holds no labelled accepted document: quality cannot be measured.", "quality check")
        accuracy = correct / total
        if accuracy < self.min_accuracy:
            raise StoppedError(
                "quality_below_threshold",
                f"accuracy {accuracy:.3f} ({correct}/{total}) on the check set is below the declared {self.min_accuracy}.",
                "quality check",
            )


def parse(raw: dict, path) -> StopRules:
    section = raw.get("stop_rules", {})
    if not isinstance(section, dict):
        raise ConfigError(f"{path}: stop_rules must be an object.", f"Use the keys {', '.join(RULES)}.")
    unknown = sorted(set(section) - set(RULES))
    if unknown:
        raise ConfigError(f"{path}: stop_rules names an unknown rule {unknown[0]!r}.", f"Known rules: {', '.join(RULES)}.")
    flags = {}
    for name in ("non_finite_loss", "essential_input_missing", "checkpoint_not_reloadable"):
        value = section.get(name, False)
        if not isinstance(value, bool):
            raise ConfigError(f"{path}: stop_rules.{name} must be true or false, got {value!r}.", "Declare each rule on or off.")
        flags[name] = value
    quality = section.get("quality_below_threshold")
    if quality is None or quality is False:
        return StopRules(**flags)
    if not isinstance(quality, dict):
        raise ConfigError(f"{path}: stop_rules.quality_below_threshold must be an object.", '{"min_accuracy": 0.8, "check_set": "labelled"}')
    threshold = quality.get("min_accuracy")
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0 <= threshold <= 1:
        raise ConfigError(f"{path}: stop_rules.quality_below_threshold.min_accuracy must be a number in [0, 1], got {threshold!r}.", "For example 0.8.")
    check_set = quality.get("check_set", "labelled")
    if check_set != "labelled" and not (isinstance(check_set, list) and check_set and all(isinstance(i, str) for i in check_set)):
        raise ConfigError(f"{path}: stop_rules.quality_below_threshold.check_set must be \"labelled\" or a list of document IDs.", 'For example ["doc-01", "doc-02"].')
    return StopRules(**flags, min_accuracy=float(threshold), check_set=check_set)


def check_set_ids(rules: StopRules, documents, categories: list[str]) -> list[str]:
    """IDs the quality rule measures: labelled, accepted documents (validated against the input)."""
    by_id = {d.id: d for d in documents}
    if rules.check_set == "labelled":
        return [d.id for d in documents if d.accepted and d.label in categories]
    unknown = [i for i in rules.check_set if i not in by_id]
    if unknown:
        raise ConfigError(f"stop_rules.quality_below_threshold.check_set names {unknown[0]!r}, which the input manifest does not list.", "List IDs of labelled pilot documents.")
    unlabelled = [i for i in rules.check_set if by_id[i].label not in categories]
    if unlabelled:
        raise ConfigError(f"check set document {unlabelled[0]} has no label among the categories.", "The check set holds labelled documents only.")
    return [i for i in rules.check_set if by_id[i].accepted]
