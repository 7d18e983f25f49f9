"""Tables on the command line: rich's boxed table on a terminal; plain rows everywhere else.

Piped into a CI log, rich lays a table out at 80 columns and cuts cells to fit ("simultaneou…").
When the output is not a terminal each row is printed whole on one line, cells separated by
" | " (header first), so no cell is ever cut and a log can be grepped."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

SEP = " | "


def print_table(console: Console, table: Table) -> None:
    if console.is_terminal:
        console.print(table)
        return
    for line in plain_lines(table):
        # soft_wrap: never wrapped at the console's width; markup off: the text is already plain.
        console.print(line, soft_wrap=True, markup=False, highlight=False, emoji=False)


def plain_lines(table: Table) -> list[str]:
    lines = [_plain(table.title)] if table.title else []
    if table.show_header:
        lines.append(SEP.join(_plain(c.header) for c in table.columns))
    for row in zip(*(list(c.cells) for c in table.columns)):
        lines.append(SEP.join(_plain(cell) for cell in row))
    return lines + ([_plain(table.caption)] if table.caption else [])


def _plain(cell: Any) -> str:
    from rich.text import Text

    if isinstance(cell, str):
        cell = Text.from_markup(cell)  # as the table renders a str cell: markup applied, not shown
    text = cell.plain if isinstance(cell, Text) else str(cell)
    return " ".join(text.split())  # a cell's line breaks and tabs: one line per row
