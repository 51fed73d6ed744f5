"""Size report of a built image: total, the five largest layers and what made them, vs the budget.

Sizes are in bytes; "MB" means 10^6 bytes, as `docker images` shows them and as
bundle.toml's ``size_budget_mb`` is read.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field

from bundler.engine import Engine
from bundler.errors import BuildError

MB = 1_000_000
_NOP = re.compile(r"^/bin/sh -c #\(nop\)\s*")
_RUN = re.compile(r"^(?:\|\d+(?: [A-Za-z_][A-Za-z0-9_]*=\S*)* )?/bin/sh -c\s+")  # "|1 ARG=value /bin/sh -c" with build args


@dataclass(frozen=True)
class Layer:
    instruction: str
    size: int
    image_id: str  # the step's image ID ("<missing>" for layers of the base)


@dataclass
class SizeReport:
    total: int
    budget: int
    layers: list[Layer] = field(default_factory=list)  # every history entry, oldest first

    @property
    def over_budget(self) -> bool:
        return self.total > self.budget

    def largest(self, count: int = 5) -> list[Layer]:
        return sorted((layer for layer in self.layers if layer.size > 0), key=lambda layer: -layer.size)[:count]

    def as_dict(self) -> dict:
        return {
            "total_bytes": self.total,
            "total_mb": round(self.total / MB, 1),
            "budget_mb": self.budget // MB,
            "over_budget": self.over_budget,
            "largest_layers": [asdict(layer) | {"mb": round(layer.size / MB, 1)} for layer in self.largest()],
        }

    def lines(self) -> list[str]:
        verdict = "over" if self.over_budget else "within"
        out = [f"Image size {self.total / MB:.1f} MB, {verdict} the budget of {self.budget // MB} MB (bundle.toml [build] size_budget_mb)."]
        for layer in self.largest():
            out.append(f"  {layer.size / MB:9.1f} MB  {layer.instruction[:110]}")
        return out


def instruction(created_by: str) -> str:
    """`/bin/sh -c #(nop) COPY dir:… in /x` -> `COPY dir:… in /x`; a RUN gets its keyword back."""
    text = (created_by or "").strip()
    if _NOP.match(text):
        return _NOP.sub("", text)
    if _RUN.match(text):
        return "RUN " + _RUN.sub("", text)
    return text or "(base image)"


def history(engine: Engine, image_id: str) -> list[Layer]:
    return [Layer(instruction(entry.created_by), entry.size, entry.image_id) for entry in reversed(engine.history(image_id))]


def size_report(engine: Engine, image_id: str, budget_mb: int) -> SizeReport:
    image = engine.image(image_id)
    return SizeReport(image.size if image else 0, budget_mb * MB, history(engine, image_id))


def enforce(report: SizeReport, strict: bool, where: str) -> str | None:
    """A warning line when over budget; with --strict a BuildError instead."""
    if not report.over_budget:
        return None
    message = (
        f"the image is {report.total / MB:.1f} MB, over the size budget of {report.budget // MB} MB set in {where}; "
        f"largest layer: {report.largest(1)[0].instruction[:120] if report.largest(1) else 'n/a'}."
    )
    if strict:
        raise BuildError(
            message + " Nothing was tagged (--strict).",
            hint="Drop dependencies you do not need, or raise [build] size_budget_mb if the size is expected.",
            value=report.total,
        )
    return message
