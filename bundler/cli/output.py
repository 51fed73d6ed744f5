"""How a command speaks: human text on stderr, one JSON document on stdout with --json."""

from __future__ import annotations

import json
import sys
from typing import Any


def write_document(data: dict) -> None:
    """The one JSON document of a command (stdout); only ever written once per command."""
    sys.stdout.write(json.dumps(data, indent=2, sort_keys=True, default=str) + "\n")
    sys.stdout.flush()


MIN_WIDTH = 60  # narrower, a table's cells shrink to nothing; wider lines wrap in the terminal instead


def literal(value: object):
    """``value`` as Rich text that is never read as markup: ``[/mnt/data]`` stays what the user wrote.

    The one place user text meets Rich: ``say`` prints without markup, tables and progress
    descriptions take their text through here.
    """
    from rich.text import Text

    return Text(str(value))


class Output:
    """Collects what a command says; with ``json_mode`` the human text stays off stdout."""

    def __init__(self, json_mode: bool = False) -> None:
        self.json_mode = json_mode
        self._console = None

    @property
    def console(self):
        if self._console is None:
            from rich.console import Console

            self._console = Console(
                stderr=True, highlight=False, soft_wrap=True, emoji=False
            )  # text is printed as given: a:smile:b stays a path
            if self._console.width < MIN_WIDTH:  # COLUMNS=1 or a tiny pane: tables would shrink to empty borders
                self._console.width = MIN_WIDTH
        return self._console

    def say(self, text: str = "", *, style: str | None = None) -> None:
        """A line for people (stderr, so stdout stays clean for --json)."""
        self.console.print(text, style=style, markup=False)

    def table(self, title: str | None, columns: list[str], rows: list[list[Any]]) -> None:
        from rich.table import Table

        table = Table(title=literal(title) if title is not None else None, show_lines=False)
        for column in columns:
            table.add_column(literal(column))
        for row in rows:
            table.add_row(*(literal(cell) for cell in row))
        self.console.print(table)

    def result(self, data: dict) -> None:
        """The machine-readable result of a command that succeeded (stdout, only with --json)."""
        if self.json_mode:
            write_document(data)
