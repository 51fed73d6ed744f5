"""Environment markers evaluated for the Target, not for this host.

A requirement such as ``torch==2.6.0; platform_machine == "x86_64"`` next to
``torch==2.6.0; sys_platform == "darwin"`` means one line per machine: bundler keeps the
lines whose marker holds on the Target (Linux, its architecture, its Python minor) and
drops the others before anything is resolved.
"""

from __future__ import annotations


def target_environment(target) -> dict[str, str]:
    """PEP 508 marker variables of the Target's interpreter (patch level unknown: ``.0``)."""
    machine = target.platform.split("_", 1)[1] if "_" in target.platform else target.platform
    full = f"{target.python}.0"
    return {
        "implementation_name": "cpython",
        "implementation_version": full,
        "os_name": "posix",
        "platform_machine": machine,
        "platform_python_implementation": "CPython",
        "platform_release": "",
        "platform_system": "Linux",
        "platform_version": "",
        "python_full_version": full,
        "python_version": target.python,
        "sys_platform": "linux",
        "extra": "",
    }


def describe(target) -> str:
    return f"Linux {target_environment(target)['platform_machine']}, Python {target.python}"


def marker_holds(marker, target) -> bool:
    """Whether a packaging ``Marker`` holds on the Target."""
    return bool(marker.evaluate(target_environment(target)))
