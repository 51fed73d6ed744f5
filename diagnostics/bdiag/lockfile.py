"""The bundle's lock as the diagnostics read it, through bdiag/contracts (generated from bundler's own
contracts: the same logical lines, pins, sha256 hashes and marker evaluator as `bundler lock`)."""

from __future__ import annotations

import os
import platform
import sys
from dataclasses import dataclass

from bdiag.contracts.lockformat import (
    INDEX_OPTIONS,
    LockFormatError,
    Pin,
    canonical_name,
    logical_lines,
    option_value,
    parse_pin,
    split_header,
)
from bdiag.contracts.markers import MarkerError, marker_holds, same_version

__all__ = ["Lock", "LockCorrupt", "Pin", "marker_applies", "normalize", "read_lock", "same_version"]

_OPTIONS_WITH_VALUE = (
    "--index-url",
    "-i",
    "--extra-index-url",
    "--find-links",
    "-f",
    "--trusted-host",
    "--no-binary",
    "--only-binary",
    "-c",
    "--constraint",
    "-r",
    "--requirement",
)
_FLAG_OPTIONS = ("--prefer-binary", "--require-hashes", "--no-index", "--pre")
normalize = canonical_name


class LockCorrupt(ValueError):
    def __init__(self, path: str, line: int, text: str, why: str) -> None:
        super().__init__(f"{path}, line {line}: {why}: {text[:120]!r}")
        self.path, self.line, self.text, self.why = path, line, text, why


@dataclass
class Lock:
    path: str
    pins: dict[str, Pin]  # canonical name -> the pin that applies here
    index_urls: list[str]
    torch_index: str = "pytorch"  # the header's `# torch-index:`: pytorch (labelled +cu128 wheels) or pypi (unlabelled)


def read_lock(path: str) -> Lock:
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise LockCorrupt(path, 1, repr(raw[:40]), f"not UTF-8 text ({error.reason})") from None
    if "\x00" in text:
        raise LockCorrupt(path, 1, "", "contains NUL bytes")
    pins: dict[str, Pin] = {}
    index_urls: list[str] = []
    for line in logical_lines(text):
        if line.text.startswith("-"):
            option, value = option_value(line.text)
            if option in INDEX_OPTIONS:
                index_urls.append(value)
            elif option not in _OPTIONS_WITH_VALUE + _FLAG_OPTIONS + ("-e", "--editable"):
                raise LockCorrupt(path, line.number, line.text, f"unknown option {option}")
            continue
        try:
            pin = parse_pin(line.text, line.number)
        except LockFormatError as error:
            raise LockCorrupt(path, error.line, error.text, error.why) from None
        if pin.name in pins and marker_applies(pins[pin.name].marker) is not False and marker_applies(pin.marker) is not False:
            raise LockCorrupt(path, line.number, line.text, f"{pin.name} is pinned twice")
        if pin.name not in pins or marker_applies(pin.marker) is not False:
            pins[pin.name] = pin
    header, _ = split_header(text)
    return Lock(path=path, pins=pins, index_urls=index_urls, torch_index=header.get("torch-index") or "pytorch")


def marker_environment() -> dict[str, str]:
    """PEP 508's variables for this interpreter."""
    return {
        "implementation_name": sys.implementation.name,
        "implementation_version": platform.python_version(),
        "os_name": os.name,
        "platform_machine": platform.machine(),
        "platform_python_implementation": platform.python_implementation(),
        "platform_release": platform.release(),
        "platform_system": platform.system(),
        "platform_version": platform.version(),
        "python_full_version": platform.python_version(),
        "python_version": "{}.{}".format(*sys.version_info[:2]),
        "sys_platform": sys.platform,
        "extra": "",
    }


def marker_applies(marker: str) -> bool | None:
    """True/False for a pin's marker here; None when it cannot be evaluated."""
    if not marker:
        return True
    try:
        return marker_holds(marker, marker_environment())
    except MarkerError:
        return None
