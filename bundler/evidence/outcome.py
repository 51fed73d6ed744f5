"""The result of checking a run: each check's verdict and the run's one status.

`runs verify`, `runs summary` and `plan` all read ``Verification.status``: accepted, or why
not — stopped (a stop rule), incomplete (never finished), killed (its process died),
running (still held by its process), or failed (a check).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

LISTED = 5  # problems named per check before "and N more"


@dataclass
class Check:
    name: str
    ok: bool
    detail: str

    def as_dict(self) -> dict:
        return {"name": self.name, "ok": self.ok, "detail": self.detail}


@dataclass
class Verification:
    run_dir: Path
    checks: list[Check] = field(default_factory=list)
    reload_seconds: float | None = None
    ended: str = "complete"  # how the run itself ended: complete, stopped, failed, incomplete, killed, or running

    @property
    def accepted(self) -> bool:
        return all(check.ok for check in self.checks)

    @property
    def status(self) -> str:
        """The one verdict on a run (`runs verify`, `runs summary` and `plan` all read it):
        accepted, or why not: stopped (a stop rule), incomplete (interrupted), failed (a check)."""
        if self.ended in ("stopped", "incomplete", "killed", "running"):
            return self.ended
        return "accepted" if self.accepted else "failed"

    @property
    def problems(self) -> list[Check]:
        return [check for check in self.checks if not check.ok]

    def as_dict(self) -> dict:
        return {
            "run_dir": str(self.run_dir),
            "accepted": self.accepted,
            "status": self.status,
            "checks": [check.as_dict() for check in self.checks],
            "reload_seconds": self.reload_seconds,
        }


def named(what: str, items: list[str]) -> list[str]:
    if not items:
        return []
    shown = ", ".join(items[:LISTED])
    more = f" and {len(items) - LISTED} more" if len(items) > LISTED else ""
    return [f"{what}: {shown}{more}"]


def verdict(name: str, problems: list[str], ok_detail: str) -> Check:
    return Check(name, not problems, "; ".join(problems) if problems else ok_detail)
