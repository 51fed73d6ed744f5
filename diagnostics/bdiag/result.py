"""One stage's verdict: status, measured values, a key figure and a hint."""

from __future__ import annotations

from dataclasses import dataclass, field

PASS, WARN, FAIL, SKIP = "pass", "warn", "fail", "skip"
_RANK = {PASS: 0, WARN: 1, FAIL: 2}


@dataclass
class StageResult:
    name: str
    number: int = 0
    status: str = PASS
    values: dict = field(default_factory=dict)
    summary: str = ""
    hint: str | None = None
    messages: list = field(default_factory=list)
    seconds: float = 0.0
    figures: list = field(default_factory=list)

    def _raise_to(self, status: str, message: str, hint: str | None) -> None:
        if self.status == SKIP or _RANK[status] > _RANK[self.status]:
            self.status = status
        self.messages.append(f"{status}: {message}")
        if hint:
            self.hint = hint if not self.hint else (self.hint if hint in self.hint else f"{self.hint} {hint}")

    def fail(self, message: str, hint: str | None = None) -> None:
        self._raise_to(FAIL, message, hint)

    def warn(self, message: str, hint: str | None = None) -> None:
        self._raise_to(WARN, message, hint)

    def skip(self, reason: str, hint: str | None = None) -> None:
        """Mark the stage as not applicable; a skip never hides an earlier warn or fail."""
        if self.status == PASS:
            self.status = SKIP
        self.messages.append(f"skip: {reason}")
        if hint and not self.hint:
            self.hint = hint

    def note(self, message: str) -> None:
        self.messages.append(message)

    def figure(self, label: str, measured: float, reference: float, unit: str, pass_at: float = 1.0, warn_at: float | None = None) -> None:
        """A measured figure against its reference (the datasheet, a limit, what the work needs), higher
        being better: the HTML report draws it as a bar, coloured by where measured/reference falls."""
        fraction = measured / reference if reference else 0.0
        status = PASS if fraction >= pass_at else (WARN if warn_at is not None and fraction >= warn_at else FAIL)
        self.figures.append(
            {
                "label": label,
                "measured": round(float(measured), 3),
                "reference": round(float(reference), 3),
                "unit": unit,
                "fraction": round(fraction, 3),
                "status": status,
            }
        )

    @property
    def reason(self) -> str:
        """The first message that explains a non-pass status (what the table shows)."""
        for message in self.messages:
            if message.startswith(f"{self.status}: "):
                return message.split(": ", 1)[1]
        return ""

    def as_dict(self) -> dict:
        return {
            "name": self.name,
            "number": self.number,
            "status": self.status,
            "summary": self.summary,
            "values": self.values,
            "seconds": round(self.seconds, 3),
            "hint": self.hint,
            "messages": self.messages,
            "figures": self.figures,
        }
