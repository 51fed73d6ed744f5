"""`bundler init [PROJECT]`: adopt an existing repository in place."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from bundler.cli.options import CpuFlag, CudaFlag, JsonFlag, PlatformFlag, PythonFlag, RocmFlag, TorchFlag, handles_errors
from bundler.cli.output import Output


def register(app: typer.Typer) -> None:
    @app.command("init")
    @handles_errors
    def init_command(
        project: Annotated[
            Optional[Path],
            typer.Argument(help="The repository to adopt (default: the current folder).", show_default=False, readable=False),
        ] = None,
        cuda: CudaFlag = None,
        rocm: RocmFlag = None,
        cpu: CpuFlag = False,
        torch: TorchFlag = None,
        python: PythonFlag = None,
        platform: PlatformFlag = None,
        entry: Annotated[
            Optional[str],
            typer.Option("--entry", metavar="CMD", help="The command the bundle runs, from the project root.", show_default=False),
        ] = None,
        extra: Annotated[
            Optional[list[str]], typer.Option("--extra", metavar="NAME", help="Include a named extra of the package; repeatable.")
        ] = None,
        no_input: Annotated[bool, typer.Option("--no-input", help="Never prompt.")] = False,
        dry_run: Annotated[bool, typer.Option("--dry-run", help="Print what would be written; write nothing.")] = False,
        json_output: JsonFlag = False,
    ) -> None:
        """Adopt an existing repository: read its dependencies, infer the Target, write bundle.toml and what the bundle needs."""
        from bundler.adopt.infer import Flags
        from bundler.adopt.run import adopt
        from bundler.errors import UsageError

        out = Output(json_output)
        chosen = [flag for flag, value in (("--cuda", cuda), ("--rocm", rocm), ("--cpu", cpu or None)) if value is not None]
        if len(chosen) > 1:
            raise UsageError(
                f"{' and '.join(chosen)} were both given; a Target has one backend.", hint="Pass one of --cuda VER, --rocm VER or --cpu."
            )
        flags = Flags(cuda=cuda, rocm=rocm, cpu=cpu, torch=torch, python=python, platform=platform)
        root = project if project is not None else Path(".")
        interactive = not no_input and not json_output and not dry_run and sys.stdin.isatty()
        if interactive and not entry:
            planned = adopt(root, flags, extras=extra, dry_run=True)
            if not planned.entry.command:
                entry = (
                    typer.prompt("entry command (run from the project root; empty to set it later)", default="", show_default=False) or None
                )
        adoption = adopt(root, flags, entry=entry, extras=extra, dry_run=dry_run)
        findings = _path_findings(adoption.root)
        _say(out, adoption, dry_run, findings, str(root))
        out.result(_document(adoption, dry_run, findings))


def _path_findings(root: Path) -> int:
    from bundler.portability import scan

    return len(scan.scan(root).failing)


def _say(out: Output, adoption, dry_run: bool, findings: int, shown: str) -> None:
    sources, inferred, planned = adoption.sources, adoption.inferred, adoption.planned
    out.say(f"{'Would adopt' if dry_run else 'Adopted'} {adoption.root}{' (dry run: nothing written)' if dry_run else ''}.")
    chosen = sources.chosen
    if chosen is not None:
        out.say(f"Dependencies: {chosen.file} ({len(chosen.dependencies)} requirements): {sources.reason}.")
    for label, items in (
        ("not read (left for you)", [i for s in sources.found for i in s.unreadable]),
        ("unmappable conda packages", [i for s in sources.found for i in s.unmapped]),
        ("left out", [i for s in sources.found for i in s.left_out]),
        ("the sources disagree", sources.disagreements),
        ("notes", [i for s in sources.found for i in s.notes] + adoption.notes),
    ):
        for item in items:
            out.say(f"  {label}: {item}")
    if adoption.undeclared:
        out.say(
            f"  imported by the code, provided by no requirement (one may bring it along; if not, add it to {adoption.requirements}): "
            + ", ".join(adoption.undeclared)
        )
    out.say(f"Target: {inferred.target.describe()}.")
    for label, items in (("stated", inferred.stated), ("adjusted", inferred.adjusted), ("guessed", inferred.guesses)):
        for item in items:
            out.say(f"  {label}: {item}")
    entry = adoption.entry
    out.say(
        f"Entry: {entry.command} ({entry.how})"
        if entry.command
        else "Entry: not found; set [project] entry in bundle.toml (or pass --entry CMD)."
    )
    out.say(f"{'Would write' if dry_run else 'Wrote'}: {', '.join(planned.paths())}.")
    for name, text in planned.appends.items():
        out.say(f"{'Would append' if dry_run else 'Appended'} to {name} (a marked block): {', '.join(text.splitlines()[1:-1])}.")
    for item in planned.untouched:
        out.say(f"Left untouched: {item}.")
    if dry_run:
        for name in ("bundle.toml", "requirements.in", ".dockerignore"):
            if name in planned.files:
                out.say(f"--- {name}\n{planned.files[name]}")
    quoted = shlex.quote(shown if not shown.startswith("-") else f"./{shown}")
    out.say("Next steps:")
    out.say(f"  bundler paths {quoted}   # {findings} machine-specific path(s) found; --fix rewrites them")
    for command in ("check", "lock", "build"):
        out.say(f"  bundler {command} {quoted}")
    package = adoption.sources.package
    if package is not None:
        out.say(
            f"  ({package.name or 'the package'} itself is built from {package.file} by `bundler build` and installed in the image, "
            "console scripts included: [build] install_project = true in bundle.toml)"
        )


def _document(adoption, dry_run: bool, findings: int) -> dict:
    sources, inferred, planned = adoption.sources, adoption.inferred, adoption.planned
    chosen = sources.chosen
    return {
        "ok": True,
        "dry_run": dry_run,
        "project": str(adoption.root),
        "source": {
            "file": chosen.file,
            "kind": chosen.kind,
            "reason": sources.reason,
            "requirements": [d.line for d in chosen.dependencies],
        }
        if chosen
        else None,
        "sources": [s.file for s in sources.found],
        "unreadable": [i for s in sources.found for i in s.unreadable],
        "unmapped": [i for s in sources.found for i in s.unmapped],
        "left_out": [i for s in sources.found for i in s.left_out],
        "disagreements": sources.disagreements,
        "undeclared_imports": adoption.undeclared,
        "target": {k: getattr(inferred.target, k) for k in ("backend", "accelerator", "torch", "python", "platform", "base_image")},
        "stated": inferred.stated,
        "adjusted": inferred.adjusted,
        "guesses": inferred.guesses,
        "entry": {"command": adoption.entry.command, "how": adoption.entry.how},
        "lock_input": adoption.requirements,
        "install_project": adoption.sources.package is not None,
        "written": planned.paths(),
        "appended": sorted(planned.appends),
        "untouched": planned.untouched,
        "files": {name: text for name, text in planned.files.items() if not name.startswith("diagnostics/")} if dry_run else {},
        "path_findings": findings,
    }
