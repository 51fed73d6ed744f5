"""`bundler cache list|prune`: the wheel cache and bundler's images, with sizes."""

from __future__ import annotations

import datetime
import math
from typing import TYPE_CHECKING, Annotated

import typer

from bundler.cli.options import EngineOption, JsonFlag, handles_errors
from bundler.cli.output import Output
from bundler.errors import EngineError, UsageError

if TYPE_CHECKING:
    from bundler.engine import Engine

cache_app = typer.Typer(
    help="List and prune what builds keep: the wheel cache and bundler's dependency and builder images.",
    invoke_without_command=True,
)


def register(app: typer.Typer) -> None:
    app.add_typer(cache_app, name="cache")


def _engine(name: str | None) -> tuple[Engine | None, str]:
    """(the engine, "") when one answers; (None, why) otherwise: the wheel cache is listed all the same."""
    from bundler import engine

    choice = engine.choose(name)  # an unknown --engine is refused, not taken for a missing engine
    try:
        return engine.connect(name, 120), ""
    except EngineError:
        return None, f"no {'Podman' if choice.name == 'podman' else 'Docker'} engine answers at {choice.address}"


def _size(count: int) -> str:
    return f"{count / 1e9:.2f} GB" if count >= 1e9 else f"{count / 1e6:.1f} MB"


@cache_app.callback()
def _default(context: typer.Context, engine: EngineOption = None, json_output: JsonFlag = False) -> None:
    if context.invoked_subcommand is None:
        list_command(engine=engine, json_output=json_output)


@cache_app.command("list")
@handles_errors
def list_command(engine: EngineOption = None, json_output: JsonFlag = False) -> None:
    """What the cache holds and what each of bundler's images would free (the default)."""
    from bundler.image.cache import listing

    out = Output(json_output)
    client, why = _engine(engine)
    found = listing(client, why_none=why)
    data = found.as_dict()
    out.say(f"Wheel cache {data['wheels']['root']}: {data['wheels']['files']} files, {_size(data['wheels']['bytes'])}.")
    if found.engine_note:
        out.say(f"note: {found.engine_note}")
    rows = []
    for image in found.images:
        created = datetime.datetime.fromtimestamp(image.created, datetime.timezone.utc).strftime("%Y-%m-%d %H:%M")
        rows.append([image.kind, ", ".join(image.tags) or image.id[:19], _size(image.bytes), created, image.in_use or "no (prunable)"])
    if rows:
        out.table("bundler's images", ["kind", "image", "frees", "created (UTC)", "in use"], rows)
    out.say(f"Total: {_size(data['total_bytes'])} (images: what removing each would free, layers shared with others not counted).")
    out.result({"ok": True, **data})


@cache_app.command("prune")
@handles_errors
def prune_command(
    images: Annotated[bool, typer.Option("--images", help="Only bundler's unused dependency and builder images.")] = False,
    wheels: Annotated[bool, typer.Option("--wheels", help="Only the wheel cache.")] = False,
    older_than: Annotated[
        float,
        typer.Option("--older-than", metavar="DAYS", help="Keep what was used (files) or made (images) in the last DAYS days."),
    ] = 0,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Say what would go; remove nothing.")] = False,
    engine: EngineOption = None,
    json_output: JsonFlag = False,
) -> None:
    """Remove bundler's unused images and cached wheels; never an image or file bundler did not make."""
    from bundler.image.cache import prune

    if not math.isfinite(older_than) or older_than < 0:
        raise UsageError(
            f"--older-than {older_than} is not a number of days.",
            hint="Give DAYS as a finite number of at least 0, e.g. --older-than 30 (0 keeps nothing by age).",
            value=str(older_than),
        )
    out = Output(json_output)
    both = not images and not wheels
    client, why = _engine(engine) if images or both else (None, "")
    result = prune(client, images=images or both, wheels=wheels or both, older_than_days=older_than, dry_run=dry_run, why_none=why)
    verb = "Would remove" if dry_run else "Removed"
    files = f"{len(result.files)} cached files ({_size(result.file_bytes)})"
    out.say(f"{verb} {files} and {len(result.images)} images ({_size(result.image_bytes)}).")
    for image in result.images:
        out.say(f"  {image['kind']} image {', '.join(image['tags']) or image['id'][:19]}  {_size(image['bytes'])}")
    for kept in result.kept:
        out.say(f"  kept {', '.join(kept['tags']) or kept['id'][:19]}: {kept['why']}")
    for note in result.notes:
        out.say(f"note: {note}")
    out.result({"ok": True, **result.as_dict()})
