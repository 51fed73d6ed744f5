"""`bundler build [PROJECT] [--tag TAG] [--base IMAGE] [--export FILE.tar] [--push REF] [--check-reproducible] [--strict]
[--engine docker|podman]`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from bundler.cli.options import EngineOption, JsonFlag, ProjectArg, handles_errors
from bundler.cli.output import Output


def register(app: typer.Typer) -> None:
    @app.command(
        "build",
        help="Build the bundle's image (locked wheels offline, secrets left out), check it, tag it; optionally export or push it.",
    )
    @handles_errors
    def build_command(
        project: ProjectArg = None,
        tag: Annotated[
            Optional[str],
            typer.Option("--tag", metavar="TAG", help="Tag of the image (default: bundler/<name>:<build>-<lock sha>).", show_default=False),
        ] = None,
        base: Annotated[
            Optional[str],
            typer.Option("--base", metavar="IMAGE", help="Base image instead of bundle.toml's base_image.", show_default=False),
        ] = None,
        export: Annotated[
            Optional[Path],
            typer.Option(
                "--export", metavar="FILE.tar", help="Save the image to FILE.tar with FILE.tar.sha256 beside it.", show_default=False
            ),
        ] = None,
        push: Annotated[
            Optional[str],
            typer.Option("--push", metavar="REF", help="Push the image to a registry as REF (HOST[:PORT]/NAME[:TAG]).", show_default=False),
        ] = None,
        check_reproducible: Annotated[
            bool,
            typer.Option(
                "--check-reproducible",
                help="Build a second time without any cache and compare the layers; name the first differing file (exit 1).",
            ),
        ] = False,
        strict: Annotated[
            bool, typer.Option("--strict", help="Fail (and tag nothing) when the image is over [build] size_budget_mb.")
        ] = False,
        engine: EngineOption = None,
        json_output: JsonFlag = False,
    ) -> None:
        from bundler.image.build import run_build
        from bundler.target.bundle import load_bundle

        out = Output(json_output)
        bundle = load_bundle(project)
        result = run_build(
            bundle,
            tag=tag,
            base=base,
            export=export,
            push=push,
            strict=strict,
            check_reproducible=check_reproducible,
            engine=engine,
            say=out.say,
        )
        for line in result.size.lines():
            out.say(line)
        for note in result.notes:
            out.say(f"note: {note}")
        torch = result.smoke.get("torch", {})
        checked = "checked when that image was made" if result.built.deps.reused else "checked now"
        imports = result.smoke.get("imports") or {}
        imported = f", {imports['imported']} modules of the direct dependencies imported" if imports.get("modules") else ""
        out.say(
            f"Checks passed: torch {torch.get('version')} (cuda {torch.get('cuda')}, hip {torch.get('hip')}){imported} "
            f"in the dependency image ({checked}); entry point, diagnostics and {len(result.smoke['project']['config_files'])} "
            "config files in the project layers."
        )
        wheel = result.plan.project_wheel
        if wheel is not None:
            how = "unchanged tree, from the cache" if wheel.reused else "built by the project's own backend"
            out.say(f"Project wheel: {wheel.filename} (sha256 {wheel.sha256[:16]}…, {how}), installed after the code.")
        if result.reproducible:
            out.say(f"Reproducible: a second cold build gave the same {len(result.reproducible['layers'])} layer diff IDs and labels.")
        out.say(f"Built {result.tag} ({result.image_id[:19]}) in {result.seconds:.1f} s.")
        out.say(f"Run it:      {result.commands['run']}")
        out.say(f"Diagnostics: {result.commands['diagnose']}")
        if result.export:
            out.say(f"Exported {result.export['path']} ({result.export['bytes'] / 1e6:.1f} MB, sha256 {result.export['sha256'][:16]}…).")
            out.say(f"On the rented box: {result.export['load_command']}")
        if result.push:
            out.say(f"Pushed {result.push['reference']} ({result.push['digest']}); pull it with: {result.push['pull_command']}")
        out.result(result.as_dict())
