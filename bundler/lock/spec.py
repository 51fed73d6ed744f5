"""What a lock must be before anything is resolved: the Target's build, its labelled
pins, the indexes, the base images, the input hash, and where resolution has to run."""

from __future__ import annotations

import os
import platform
import sys
from dataclasses import dataclass, field
from pathlib import Path

from bundler.errors import UsageError
from bundler.lock.lockfile import input_hash, target_fields
from bundler.lock.requirements import CompiledInput, compile_input, input_text, line_name
from bundler.lock.uvresolve import uv_binary
from bundler.target.bundle import Bundle, Target
from bundler.target.table import CompatTable, TorchBuild
from bundler.target.table_file import load_table


@dataclass
class LockSpec:
    bundle: Bundle
    target: Target
    build: TorchBuild
    requirements_in: str
    compiled_input: list[str]
    pins: dict[str, str]
    index_url: str
    extra_index_urls: list[str]
    base_images: dict[str, str]
    input_sha256: str
    needs_setuptools: bool
    host_mismatch: str | None
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # what the user should look at: the lock is written all the same
    resolver: str = "pip-tools"  # pip-tools (the default) | uv
    requirements: CompiledInput = field(default_factory=CompiledInput)  # direct names, project indexes and wheels

    @property
    def lock_path(self) -> Path:
        return self.bundle.lock_path

    @property
    def base_image(self) -> str:
        image = self.target.base_image or self.base_images["runtime"]
        return f"{image}@{self.target.base_digest}" if self.target.base_digest else image

    def as_dict(self) -> dict:
        build = self.build
        return {
            "target": target_fields(self.target) | {"base_image": self.target.base_image, "base_digest": self.target.base_digest},
            "build": build.tag,
            "torch_index": build.source,
            "index_url": self.index_url,
            "extra_index_urls": self.extra_index_urls,
            "pins": [f"{name}=={version}" for name, version in self.pins.items()],
            "compiled_input": self.compiled_input,
            "base_image": self.base_image,
            "suggested_base_images": self.base_images,
            "lock": str(self.lock_path),
            "input_sha256": self.input_sha256,
            "resolver": self.resolver,
            "resolve_in": "container" if self.host_mismatch else "host",
            "resolve_reason": self.host_mismatch,
            "confirmed": build.release.confirmed
            and (build.cuda.confirmed if build.cuda else True)
            and (build.rocm.confirmed if build.rocm else True),
            "driver": {"toolkit": build.cuda.driver_toolkit, "minor_compat": build.cuda.driver_minor_compat} if build.cuda else None,
            "arch": list(build.arch),
            "pypi_cuda": build.release.pypi_cuda or None,
            "notes": self.notes,
            "warnings": self.warnings,
            "direct": self.requirements.direct,
            "project_indexes": self.requirements.extra_indexes,
            "project_wheels": [wheel.relative for wheel in self.requirements.project_wheels],
        }


RESOLVERS = ("pip-tools", "uv")


def make_spec(
    bundle: Bundle, target: Target, table: CompatTable | None = None, resolver: str = "pip-tools", skip_references: bool = False
) -> LockSpec:
    if resolver not in RESOLVERS:
        raise UsageError(f"--resolver {resolver!r} is not one of {', '.join(RESOLVERS)}.", hint="pip-tools is the default.", value=resolver)
    if resolver == "uv":
        uv_binary()  # a missing uv is said before anything is planned
    table = table or load_table()
    build = table.build_for(target)  # TargetError names the valid choices
    companions = build.companions()
    requirements = compile_input(bundle.root, companions, target, build, bundle.requirements, table, skip_references)
    compiled, notes = requirements.lines, requirements.notes
    text = input_text(bundle.root, bundle.requirements) or ""  # compile_input has read it
    pins = {name: version for name, version in companions.items() if name == "torch" or any(line_name(line) == name for line in compiled)}
    if not build.release.confirmed:
        notes.append(
            f"the table row for torch {target.torch} is marked unconfirmed "
            f"({build.release.note or 'not checked against a published source'})."
        )
    return LockSpec(
        bundle=bundle,
        target=target,
        build=build,
        requirements_in=text,
        compiled_input=compiled,
        pins=pins,
        index_url=build.index_url,
        extra_index_urls=[*build.extra_index_urls, *requirements.extra_indexes],
        base_images=table.base_images(build, target.python),
        input_sha256=input_hash(text, target),
        needs_setuptools=build.release.needs_setuptools(target.python),
        host_mismatch=None if resolver == "uv" else host_mismatch(target),  # uv resolves for any Target here
        notes=notes,
        resolver=resolver,
        requirements=requirements,
    )


def host_platform() -> str:
    machine = platform.machine().lower()
    arch = {"amd64": "x86_64", "arm64": "aarch64"}.get(machine, machine)
    return f"{platform.system().lower()}_{arch}"


def host_mismatch(target: Target) -> str | None:
    """Why pip-compile on this host would resolve for the wrong machine, or None."""
    forced = os.environ.get("BUNDLER_RESOLVE_IN", "")
    here_python = f"{sys.version_info.major}.{sys.version_info.minor}"
    reasons = []
    if host_platform() != target.platform:
        reasons.append(f"this host is {host_platform()}, the Target is {target.platform}")
    if here_python != target.python:
        reasons.append(f"this host runs Python {here_python}, the Target Python {target.python}")
    if forced == "container" and not reasons:
        reasons.append("BUNDLER_RESOLVE_IN=container")
    return "; ".join(reasons) or None
