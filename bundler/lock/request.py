"""The Target a `bundler lock` asks for: bundle.toml's [target] with the flags applied."""

from __future__ import annotations

import re
from dataclasses import replace

from bundler.errors import TargetError, UsageError
from bundler.target.bundle import Bundle, Target, validate_target
from bundler.target.table import CompatTable

EXAMPLES = {
    "--cuda": "12.8",
    "--rocm": "6.4",
    "--torch": "2.9.1",
    "--python": "3.11",
    "--torch-index": "pypi",
    "--platform": "linux/aarch64",
}


def requested_target(
    bundle: Bundle,
    table: CompatTable,
    *,
    cuda: str | None = None,
    rocm: str | None = None,
    cpu: bool = False,
    torch: str | None = None,
    python: str | None = None,
    torch_index: str | None = None,
    platform: str | None = None,
) -> Target:
    """bundle.toml's Target with the flags applied; the base image follows a backend change."""
    values = {"--cuda": cuda, "--rocm": rocm, "--torch": torch, "--python": python, "--torch-index": torch_index, "--platform": platform}
    for flag, value in values.items():
        if value is not None and not value.strip():
            raise UsageError(
                f"{flag} was given an empty value.",
                hint=f"Give it a value (e.g. {flag} {EXAMPLES[flag]}), or leave the flag out to keep bundle.toml's [target].",
                value=value,
            )
    chosen = [name for name, value in (("--cuda", cuda), ("--rocm", rocm), ("--cpu", cpu or None)) if value is not None]
    if len(chosen) > 1:
        raise UsageError(
            f"{' and '.join(chosen)} were both given; a Target has one backend.", hint="Pass one of --cuda VER, --rocm VER or --cpu."
        )
    old = bundle.target
    new = old
    if cuda is not None:
        new = replace(new, backend="cuda", accelerator=_strip_prefix(cuda.strip(), "cu", "cuda"))
    elif rocm is not None:
        new = replace(new, backend="rocm", accelerator=_strip_prefix(rocm.strip(), "rocm"))
    elif cpu:
        new = replace(new, backend="cpu", accelerator="")
    if torch is not None:
        torch = torch.strip()
        if re.fullmatch(r"\d+\.\d+", torch):
            latest = table.latest_patch(torch)
            torch = latest or torch + ".0"
        new = replace(new, torch=torch)
    if python is not None:
        new = replace(new, python=python.strip())
    if torch_index is not None:
        new = replace(new, torch_index=torch_index.strip())
    if platform is not None:
        new = replace(new, platform=platform.strip().replace("/", "_"))  # linux/aarch64 -> linux_aarch64
    validate_target(new)
    if new != old:
        new = _follow_base_image(table, old, new)
    return new


def _strip_prefix(value: str, *prefixes: str) -> str:
    for prefix in prefixes:
        if value.lower().startswith(prefix) and not value.lower().startswith(prefix + "."):
            value = value[len(prefix) :]
            if prefix == "cu" and value.isdigit() and len(value) >= 3:  # cu128 -> 12.8
                value = f"{value[:-1]}.{value[-1]}"
            break
    return value


def _follow_base_image(table: CompatTable, old: Target, new: Target) -> Target:
    """Swap a base image bundler suggested for the old Target for the new Target's one."""
    try:
        old_images = table.base_images(table.build_for(old), old.python)
    except TargetError:
        old_images = {"runtime": table.runtime_base.format(python=old.python)}
    if old.base_image and old.base_image not in old_images.values():
        return new  # the user's own choice: keep it
    kind = "devel" if old.base_image and old.base_image == old_images.get("devel") else "runtime"
    try:
        images = table.base_images(table.build_for(new), new.python)
    except TargetError:
        return new  # the combination is refused later, by the spec
    image = images.get(kind) or images["runtime"]
    return replace(new, base_image=image, base_digest="" if image != old.base_image else new.base_digest)
