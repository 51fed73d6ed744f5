"""gpus.json: datasheet figures per card, thresholds per family, driver minimums, arch rules."""

from __future__ import annotations

import json
import os
import re

from bdiag import FOLDER

DATA_FILE = os.path.join(FOLDER, "gpus.json")
_cache: dict | None = None


def data() -> dict:
    global _cache
    if _cache is None:
        with open(DATA_FILE, encoding="utf-8") as handle:
            _cache = json.load(handle)
    return _cache


def match_gpu(device_name: str) -> dict | None:
    """The datasheet row whose 'match' substring occurs in the device name, or None."""
    lowered = (device_name or "").lower()
    for row in data()["gpus"]:
        if any(pattern.lower() in lowered for pattern in row["match"]):
            return row
    return None


def thresholds(row: dict | None) -> dict:
    table = data()["thresholds"]
    family = row.get("family") if row else None
    return dict(table["default"], **table.get(family, {})) if family else dict(table["default"])


def grade(fraction: float, pass_at: float, warn_at: float) -> str:
    """pass at or above pass_at, warn from warn_at, fail below."""
    if fraction >= pass_at:
        return "pass"
    if fraction >= warn_at:
        return "warn"
    return "fail"


def version_tuple(text: str) -> tuple:
    return tuple(int(part) for part in re.findall(r"\d+", text or ""))


def nvidia_driver_minimums(cuda_version: str) -> tuple[str | None, str | None]:
    """(minimum to start a wheel built for this CUDA, full-toolkit minimum) for e.g. '12.8'."""
    table = data()["nvidia_driver"]
    parts = version_tuple(cuda_version)
    if not parts:
        return None, None
    compat = table["compat"].get(str(parts[0]))
    toolkit = table["toolkit"].get(".".join(str(p) for p in parts[:2]))
    return compat, toolkit


def driver_at_least(driver: str, minimum: str) -> bool:
    have, need = version_tuple(driver), version_tuple(minimum)
    width = max(len(have), len(need))
    return have + (0,) * (width - len(have)) >= need + (0,) * (width - len(need))


_SM_RE = re.compile(r"^sm_(\d+)(\d)([af]?)$")
_PTX_RE = re.compile(r"^compute_(\d+)(\d)([af]?)$")


def cuda_arch_support(capability: tuple[int, int], arch_list: list[str]) -> tuple[str | None, str]:
    """How a device of ``capability`` runs this wheel: ('sm_XY' | 'compute_XY', kind) or (None, 'none').

    A cubin sm_Xy runs on a device of the same major X with minor >= y ('a' variants only on
    exactly that capability); PTX compute_XY is compiled just in time on any device >= XY.
    """
    major, minor = capability
    for entry in arch_list:
        match = _SM_RE.match(entry)
        if not match:
            continue
        entry_major, entry_minor, suffix = int(match.group(1)), int(match.group(2)), match.group(3)
        if suffix == "a" and (entry_major, entry_minor) == (major, minor):
            return entry, "cubin"
        if suffix != "a" and entry_major == major and entry_minor <= minor:
            return entry, "cubin"
    for entry in arch_list:
        match = _PTX_RE.match(entry)
        if match and (int(match.group(1)), int(match.group(2))) <= (major, minor):
            return entry, "ptx"
    return None, "none"


def rocm_arch_base(gcn_arch_name: str) -> str:
    """'gfx942:sramecc+:xnack-' -> 'gfx942'."""
    return (gcn_arch_name or "").split(":", 1)[0].strip()


def index_tag(backend: str, accelerator: str) -> str:
    if backend == "cuda" and accelerator:
        return "cu" + "".join(str(p) for p in version_tuple(accelerator)[:2])
    if backend == "rocm" and accelerator:
        return "rocm" + accelerator
    return {"cuda": "cu<XY>", "rocm": "rocm<X.Y>"}.get(backend, "cpu")


def index_url(backend: str, accelerator: str) -> str:
    return data()["pytorch_index"] + index_tag(backend, accelerator)
