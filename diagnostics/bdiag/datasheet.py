"""gpus.json: datasheet figures per card, thresholds per family, driver minimums, arch rules."""

from __future__ import annotations

import json
import os
import re

from bdiag import FOLDER
from bdiag.contracts.buildtag import build_tag, version_tuple

__all__ = ["version_tuple"]  # the diagnostics' one reading of a version string (bdiag/contracts/buildtag.py)

DATA_FILE = os.path.join(FOLDER, "gpus.json")
_cache: dict | None = None


def data() -> dict:
    global _cache
    if _cache is None:
        with open(DATA_FILE, encoding="utf-8") as handle:
            _cache = json.load(handle)
    return _cache


VENDOR_WORDS = {"nvidia", "geforce", "tesla", "amd", "instinct", "radeon"}


def words(text: str) -> list:
    """'NVIDIA A100-SXM4-80GB' -> ['nvidia', 'a100', 'sxm4', '80gb']."""
    return re.sub(r"[-_]", " ", (text or "").lower()).split()


def match_gpu(device_name: str) -> dict | None:
    """The row whose longest 'match' pattern occurs in the device name as whole words, or None.

    Whole words keep 'L4' off 'L40S' and 'A10' off 'A100'; the longest pattern wins, so
    'NVIDIA H200 NVL' is the NVL card, not the SXM one whose pattern 'H200' it also holds.
    """
    name = f" {' '.join(words(device_name))} "
    best, length = None, 0
    for row in data()["gpus"]:
        for pattern in row["match"]:
            wanted = " ".join(words(pattern))
            if f" {wanted} " in name and len(wanted) > length:
                best, length = row, len(wanted)
    return best


def card_row(card: str) -> dict | None:
    """The row an offer's card name ('H100 SXM', 'A100 80GB PCIe') names: its name or an alias, word order ignored."""
    wanted = set(words(card)) - VENDOR_WORDS
    for row in data()["gpus"]:
        if any(set(words(alias)) - VENDOR_WORDS == wanted for alias in [row["name"], *row.get("aliases", [])]):
            return row
    return None


def names_card(card: str, device_name: str) -> bool:
    """Whether a device is the ordered card: by the datasheet rows the order may mean, else by its words
    ('A100 SXM' names 'NVIDIA A100-SXM4-80GB': a form factor without its generation number names them all)."""
    rows = rows_named(card)
    if rows:
        found = match_gpu(device_name)
        return any(found is row for row in rows)
    wanted, have = set(words(card)) - VENDOR_WORDS, set(words(device_name))
    return bool(wanted) and all(any(_word_names(word, other) for other in have) for word in wanted)


def rows_named(card: str) -> list:
    """The rows an order's card may mean: the one it names exactly; else every row it is a shorter
    name of ('A100 SXM': both A100 SXM rows); else the one row whose longest name it contains
    ('H200 SXM 141GB'), none when two rows fit as well ('H200 NVL 141GB' holds 'H200 141GB' too)."""
    row = card_row(card)
    if row is not None:
        return [row]
    wanted = set(words(card)) - VENDOR_WORDS
    if not wanted:
        return []

    def names(candidate: dict) -> list:
        return [set(words(alias)) - VENDOR_WORDS for alias in [candidate["name"], *candidate.get("aliases", [])]]

    broader = [candidate for candidate in data()["gpus"] if any(wanted <= name for name in names(candidate))]
    if broader:
        return broader
    best: list = []
    size = 0
    for candidate in data()["gpus"]:
        fit = max((len(name) for name in names(candidate) if name and name <= wanted), default=0)
        if fit and fit > size:
            best, size = [candidate], fit
        elif fit and fit == size:
            best.append(candidate)
    return best if len(best) == 1 else []


def _word_names(wanted: str, word: str) -> bool:
    """'sxm' names 'sxm4' and 'sxm5'; 'a10' does not name 'a100' (a word ending in a digit is whole)."""
    return word == wanted or (not wanted[-1].isdigit() and word.startswith(wanted) and word[len(wanted) :].isdigit())


def thresholds(row: dict | None) -> dict:
    """The family's bars; a row that records what healthy cards measure sets its own GEMM bars from that."""
    table = data()["thresholds"]
    family = row.get("family") if row else None
    limits = dict(table["default"], **table.get(family, {})) if family else dict(table["default"])
    healthy = (row or {}).get("gemm_healthy")
    if healthy:
        limits["gemm_pass"] = round(healthy["fraction"] * table["healthy_pass_fraction"], 3)
        limits["gemm_warn"] = round(healthy["fraction"] * table["healthy_warn_fraction"], 3)
    return limits


def grade(fraction: float, pass_at: float, warn_at: float) -> str:
    """pass at or above pass_at, warn from warn_at, fail below."""
    if fraction >= pass_at:
        return "pass"
    if fraction >= warn_at:
        return "warn"
    return "fail"


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
    """The build's name (bdiag/contracts/buildtag.py), a placeholder when the accelerator is unknown."""
    try:
        return build_tag(backend, accelerator)
    except ValueError:
        return {"cuda": "cu<XY>", "rocm": "rocm<X.Y>"}.get(backend, "cpu")


def index_url(backend: str, accelerator: str) -> str:
    return data()["pytorch_index"] + index_tag(backend, accelerator)
