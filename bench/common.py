"""Small timing helpers shared by the benchmark scripts (figures, never pass/fail)."""

from __future__ import annotations

import statistics
import subprocess
import time
from collections.abc import Callable


def timed(action: Callable[[], object], repeat: int = 5) -> list[float]:
    """Wall seconds of each of ``repeat`` calls."""
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        action()
        samples.append(time.perf_counter() - start)
    return samples


def run(command: list[str], **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(command, check=True, capture_output=True, text=True, **kwargs)


def median(samples: list[float]) -> float:
    return statistics.median(samples)


def row(name: str, samples: list[float], target: str = "") -> str:
    return f"{name:<44} median {median(samples):8.3f} s   min {min(samples):8.3f} s   n={len(samples):<3} {target}"
