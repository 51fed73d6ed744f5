"""`bundler lock`: a hashed, labelled lock for the exact CUDA, ROCm or CPU Target."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from bundler.cli.options import (
    CpuFlag,
    CudaFlag,
    EngineOption,
    JsonFlag,
    PlatformFlag,
    ProjectArg,
    PythonFlag,
    RocmFlag,
    TorchFlag,
    handles_errors,
)
from bundler.cli.output import Output


def register(app: typer.Typer) -> None:
    @app.command(
        "lock",
        help="Resolve the lock's input (requirements.in or [build] requirements) for the Target into a hashed lock, torch pins labelled.",
    )
    @handles_errors
    def lock_command(
        project: ProjectArg = None,
        cuda: CudaFlag = None,
        rocm: RocmFlag = None,
        cpu: CpuFlag = False,
        torch: TorchFlag = None,
        python: PythonFlag = None,
        torch_index: Annotated[
            Optional[str],
            typer.Option(
                "--torch-index",
                metavar="pytorch|pypi",
                help="Where torch comes from: PyTorch's index of the build (default), or PyPI when PyPI's build is the Target's.",
            ),
        ] = None,
        platform: PlatformFlag = None,
        resolver: Annotated[
            str,
            typer.Option(
                "--resolver", metavar="pip-tools|uv", help="The resolver: pip-tools (default) or uv (resolves for aarch64 from x86-64)."
            ),
        ] = "pip-tools",
        upgrade: Annotated[
            bool, typer.Option("--upgrade", help="Resolve again from scratch, ignoring the pins of the current lock.")
        ] = False,
        dry_run: Annotated[
            bool, typer.Option("--dry-run", help="Print the plan (index URL, labelled pins, base image); resolve and write nothing.")
        ] = False,
        engine: EngineOption = None,
        json_output: JsonFlag = False,
    ) -> None:
        from bundler.lock.run import run_lock
        from bundler.target.bundle import load_bundle

        out = Output(json_output)
        bundle = load_bundle(project)
        result = run_lock(
            bundle,
            cuda=cuda,
            rocm=rocm,
            cpu=cpu,
            torch=torch,
            python=python,
            torch_index=torch_index,
            platform=platform,
            resolver=resolver,
            upgrade=upgrade,
            dry_run=dry_run,
            engine=engine,
            say=out.say,
        )
        _report(out, result)
        out.result(result.as_dict())


def _report(out: Output, result) -> None:
    spec = result.spec
    data = spec.as_dict()
    if result.action == "planned":
        out.say(f"Plan for {spec.target.describe()} (nothing resolved or written):")
    out.say(f"  build       {spec.build.tag}" + ("  (PyPI's own wheel)" if spec.build.source == "pypi" else ""))
    extra = f"  (+ {', '.join(spec.extra_index_urls)})" if spec.extra_index_urls else ""
    out.say(f"  index       {spec.index_url}{extra}")
    out.say(f"  pins        {'  '.join(data['pins'])}")
    out.say(f"  base image  {spec.base_image}  (devel: {spec.base_images['devel']})")
    if data["driver"]:
        out.say(
            f"  driver      >= {data['driver']['minor_compat']} (minor-version compatibility), >= {data['driver']['toolkit']} for the "
            "full toolkit / PTX JIT"
        )
    if data["arch"]:
        out.say(f"  arch        {' '.join(data['arch'])}")
    where = result.resolution.where if result.action == "written" else data["resolve_in"]  # a host refusal may move it into the builder
    out.say(f"  resolve in  {where} with {spec.resolver}" + (f" ({spec.host_mismatch})" if spec.host_mismatch else ""))
    for note in spec.notes:
        out.say(f"  note        {note}")
    for warning in spec.warnings:
        out.say(f"  warning     {warning}")
    if result.action == "written":
        out.say(
            f"Wrote {result.lock_path} ({result.resolution.where}, {result.resolution.seconds:.1f} s)"
            + ("; bundle.toml [target] updated." if result.target_updated else ".")
        )
        if result.backup:
            out.say(f"The hand-edited lock was kept as {result.backup}.")
