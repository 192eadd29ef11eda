"""Layouts for a table too narrow to keep its identifiers whole (sage/cli/render.py's
fallback): names are copied into commands, so they are never split.

`Spilled` keeps the columns, without borders, and gives a name longer than its column a
line of its own, its row's other cells starting on the next; `Stacked`, for when even that
does not fit, puts each row's first cell on a line and the other cells under it as
"header: value".
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.text import Text

from sage.cli.render import Cell, Col, _longest_line, _plain, _whole_style, column_widths, wrap_text


class Stacked:
    """Rows that no table layout fits without splitting an identifier: each row's first cell
    on a line of its own, the other cells below it as "header: value", indented."""

    def __init__(self, cols: Sequence[Col], rows: Sequence[Sequence[Cell]], width: int, title: Any = None) -> None:
        self.cols, self.rows, self.width, self.title = list(cols), [list(r) for r in rows], width, title

    def __rich_console__(self, console: Console, options: Any) -> Any:
        if self.title is not None:
            yield Text("\n".join(wrap_text(_plain(self.title), self.width)), style="italic")
        for row in self.rows:
            head = row[0] if isinstance(row[0], Text) else Text(str(row[0]))
            yield Text.assemble(head, style="bold")
            parts = [f"{c.header}: {_plain(cell)}" if c.header else _plain(cell)
                     for c, cell in zip(self.cols[1:], row[1:]) if _plain(cell).strip()]
            if parts:
                yield Text("\n".join("    " + line for line in wrap_text("; ".join(parts), max(self.width - 4, 1))))


class Spilled:
    """A table without borders whose first column (identifiers) keeps every name whole: a name
    longer than its column has the line to itself, and its row's other cells start on the next.
    Columns are two spaces apart, under a header and a rule, as a SIMPLE_HEAD table."""

    def __init__(self, cols: Sequence[Col], rows: Sequence[Sequence[Cell]], widths: list[int], title: Any) -> None:
        self.cols, self.rows, self.widths, self.title = list(cols), [list(r) for r in rows], widths, title

    def __rich_console__(self, console: Console, options: Any) -> Any:
        total = sum(self.widths) + 2 * (len(self.widths) - 1)
        if self.title is not None:
            yield Text("\n".join(wrap_text(_plain(self.title), total)), style="italic", justify="center")
        yield from self._lines([Text(c.header, style="bold") for c in self.cols])
        yield Text("─" * total)
        for row in self.rows:
            cells = [cell if isinstance(cell, Text) else Text(str(cell)) for cell in row]
            if len(cells[0].plain) > self.widths[0]:
                yield cells[0]
                cells[0] = Text("")
            yield from self._lines(cells)

    def _lines(self, cells: list[Text]) -> Any:
        wrapped = [wrap_text(cell.plain, w, c.folds) if c.wrap else cell.plain.split("\n")
                   for cell, w, c in zip(cells, self.widths, self.cols)]
        for k in range(max(len(lines) for lines in wrapped)):
            parts: list[Any] = []
            for i, (lines, w, c) in enumerate(zip(wrapped, self.widths, self.cols)):
                piece = lines[k] if k < len(lines) else ""
                padded = piece.rjust(w) if c.justify == "right" else piece.ljust(w)
                parts += ["  " if i else "", (padded, _whole_style(cells[i]) or "")]
            line = Text.assemble(*parts)
            line.rstrip()
            yield line


def spilled(cols: Sequence[Col], rows: Sequence[Sequence[Cell]], width: int, title: Any) -> Spilled | Stacked:
    """The widest name column with which the other columns still fit, the longer names spilled
    (Spilled); Stacked when the other columns cannot fit even beside the shortest name."""
    lengths = sorted({len(_plain(r[0])) for r in rows}, reverse=True)
    # First the widest name column beside which every other column keeps its natural width
    # (the description-like columns read best unfolded), else the widest beside folded ones.
    others = sum(max([_longest_line(c.header), *(_longest_line(_plain(r[i])) for r in rows)])
                 for i, c in enumerate(cols) if i) + 2 * (len(cols) - 1)
    natural = next((n for n in lengths if n + others <= width), None)
    if natural is not None:
        widths = [natural] + [max([_longest_line(c.header), *(_longest_line(_plain(r[i])) for r in rows)])
                              for i, c in enumerate(cols) if i]
        return Spilled(cols, rows, widths, title)
    for limit in lengths:
        kept = [r if len(_plain(r[0])) <= limit else ["", *r[1:]] for r in rows]
        widths = column_widths(cols, kept, width, box=False, show_edge=False, pad_edge=False)
        if widths is not None:
            return Spilled(cols, rows, widths, title)
    return Stacked(cols, rows, width, title)
