"""Tables that fit the terminal without splitting a word (every command's tables go through here).

Left alone, rich fits a table that is too wide by folding cells at any character
(`level4/08_weight_quant_batchmatm` then `ul`) and cropping headers (`corre…`). Here the
column widths are chosen first: figures keep their natural width, text columns shrink
down to their longest unbreakable piece, a column marked optional is dropped when the
table does not fit with it. Each cell is then wrapped to its column: at spaces, and a word
longer than the column (a path) folds after `/` or `_` (a column may allow more fold
points, e.g. `,` in shapes). A column of identifiers (`IDENT`: task and operator names,
copied into commands) never folds a word: the other columns give way first, and when the
table cannot fit even so, its rows are laid out without borders, a name too long for its
column on a line of its own (sage/cli/narrow.py). Only a piece longer than the whole
terminal is ever cut, and then at the terminal's edge.

Every cell and title is hostile text until shown: it is cleaned here (sage/text.py: no
escape sequence, bidi or zero-width character reaches the terminal) and becomes a rich Text,
which rich never parses as markup.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from rich.console import Console
from rich.table import Table
from rich.text import Text

from sage.text import clean

NAME_FOLDS = "/_"
IDENT = ""               # Col(folds=IDENT): identifiers, never split
Cell = str | Text


@dataclass(frozen=True)
class Col:
    """One column: `wrap=False` for figures and short words (never wrapped). An `optional`
    column is dropped (last first) when the table cannot fit with it; an `extra` one (a long
    description) is shown only when every other column keeps its natural width and it still
    gets `min_width` characters."""

    header: str
    justify: Literal["left", "right"] = "left"
    wrap: bool = True
    folds: str = NAME_FOLDS
    optional: bool = False
    extra: bool = False
    min_width: int = 0


def pieces(word: str, folds: str = NAME_FOLDS) -> list[str]:
    """`word` split after each fold character: "level1/10_layer_norm" -> level1/ 10_ layer_ norm."""
    if not folds:
        return [word]
    return re.findall(rf"[^{re.escape(folds)}]*[{re.escape(folds)}]|[^{re.escape(folds)}]+$", word) or [word]


def wrap_text(text: str, width: int, folds: str = NAME_FOLDS) -> list[str]:
    """Lines of at most `width` characters: words stay whole where they fit, longer ones
    fold at `folds`, and only a piece longer than `width` is cut."""
    width = max(width, 1)
    lines: list[str] = []
    for paragraph in text.split("\n"):
        line = ""
        for word in paragraph.split():
            if line and len(line) + 1 + len(word) <= width:
                line += " " + word
                continue
            if line:
                lines.append(line)
                line = ""
            if len(word) <= width:
                line = word
                continue
            for piece in pieces(word, folds):
                while len(piece) > width:   # no fold point left: the last resort
                    if line:
                        lines.append(line)
                        line = ""
                    lines.append(piece[:width])
                    piece = piece[width:]
                if len(line) + len(piece) <= width:
                    line += piece
                else:
                    lines.append(line)
                    line = piece
        lines.append(line)
    return lines


def _plain(cell: Cell) -> str:
    return cell.plain if isinstance(cell, Text) else str(cell)


def _longest_piece(text: str, folds: str) -> int:
    return max((len(p) for word in text.split() for p in pieces(word, folds)), default=0)


def _longest_line(text: str) -> int:
    return max((len(line) for line in text.split("\n")), default=0)


def _overhead(ncols: int, box: bool, show_edge: bool, pad_edge: bool) -> int:
    """Characters a rich table adds around its cells (borders, separators, padding of 1)."""
    edges = (2 if show_edge else 0) + (ncols - 1) if box else 0
    padding = 2 * ncols - (0 if pad_edge else 2)
    return edges + padding


def column_widths(cols: Sequence[Col], rows: Sequence[Sequence[Cell]], width: int, *, box: bool = True,
                  show_edge: bool = True, pad_edge: bool = True) -> list[int] | None:
    """Widths that fit `width`, or None when the columns cannot fit even at their narrowest."""
    cells = [[_plain(r[i]) for r in rows] for i in range(len(cols))]
    most = [max([_longest_line(c.header), *map(_longest_line, cells[i])]) for i, c in enumerate(cols)]
    # A header may fold at its spaces even in a column of figures ("offline plan", "ref µs").
    least = [max([_longest_piece(c.header, c.folds), c.min_width, 1,
                  *(map(_longest_line, cells[i]) if not c.wrap else (_longest_piece(t, c.folds) for t in cells[i]))])
             for i, c in enumerate(cols)]
    widths = [max(m, lo) for m, lo in zip(most, least)]
    # Row 0 is the header row. lines(i, r, w): the lines cell r of column i takes at width w.
    texts = [[c.header, *cells[i]] for i, c in enumerate(cols)]
    cache: dict[tuple[int, int, int], int] = {}

    def lines(i: int, r: int, w: int) -> int:
        if (i, r, w) not in cache:
            cache[i, r, w] = len(wrap_text(texts[i][r], w, cols[i].folds))
        return cache[i, r, w]

    rows_n = len(rows) + 1
    room = width - _overhead(len(cols), box, show_edge, pad_edge)
    while sum(widths) > room:
        tall = [max(lines(i, r, widths[i]) for i in range(len(cols))) for r in range(rows_n)]
        # Narrow the column that makes the table grow the fewest lines (a header that folds
        # before a column of names), then the one whose own cells grow least, the widest first.
        # An `extra` column gives way first, down to its min_width.
        candidates = []
        for i, (w, lo) in enumerate(zip(widths, least)):
            if w > lo:
                after = [lines(i, r, w - 1) for r in range(rows_n)]
                grows = sum(max(0, n - t) for n, t in zip(after, tall))
                first = 0 if cols[i].extra and w > cols[i].min_width else 1
                candidates.append((first, grows, sum(after) - sum(lines(i, r, w) for r in range(rows_n)), -w, i))
        if not candidates:
            return None
        widths[min(candidates)[-1]] -= 1
    return widths


def fitted_table(cols: Sequence[Col], rows: Sequence[Sequence[Cell]], width: int,
                 **table_kwargs: Any) -> Any:
    """A rich Table of `rows` whose cells are pre-wrapped to widths that fit `width` (or, when
    the identifiers of an IDENT column cannot stay whole in any table that fits, a layout of
    sage.cli.narrow)."""
    cols, rows = list(cols), [[_safe(cell) for cell in r] for r in rows]
    box = table_kwargs.get("box", True) is not None
    show_edge, pad_edge = table_kwargs.get("show_edge", True), table_kwargs.get("pad_edge", True)
    for i in reversed(range(len(cols))):
        if cols[i].extra and not _room_for(cols, rows, i, width, box, show_edge, pad_edge):
            cols.pop(i)
            rows = [r[:i] + r[i + 1:] for r in rows]
    widths = column_widths(cols, rows, width, box=box, show_edge=show_edge, pad_edge=pad_edge)
    while widths is None and any(c.optional for c in cols):
        drop = max(i for i, c in enumerate(cols) if c.optional)
        cols.pop(drop)
        rows = [r[:drop] + r[drop + 1:] for r in rows]
        widths = column_widths(cols, rows, width, box=box, show_edge=show_edge, pad_edge=pad_edge)
    if widths is None and any(c.folds == IDENT for c in cols):
        from sage.cli.narrow import Stacked, spilled

        if cols[0].folds == IDENT:
            return spilled(cols, rows, width, table_kwargs.get("title"))
        return Stacked(cols, rows, width, table_kwargs.get("title"))
    if widths is None:  # narrower than the narrowest layout: rich folds what it must
        room = width - _overhead(len(cols), box, show_edge, pad_edge)
        widths = [max(1, room // len(cols))] * len(cols)
    if isinstance(table_kwargs.get("title"), str):   # a long path in a title folds like one in a cell
        total = sum(widths) + _overhead(len(cols), box, show_edge, pad_edge)
        table_kwargs["title"] = Text("\n".join(wrap_text(clean(table_kwargs["title"]), min(total, width))))
    table = Table(**table_kwargs)
    for col, w in zip(cols, widths):
        table.add_column("\n".join(wrap_text(col.header, w, col.folds)), justify=col.justify, no_wrap=True,
                         width=w, overflow="fold")
    for row in rows:
        table.add_row(*(_wrapped(cell, w, col) for cell, w, col in zip(row, widths, cols)))
    return table


def _room_for(cols: list[Col], rows: list[list[Cell]], extra: int, width: int, box: bool, show_edge: bool,
              pad_edge: bool) -> bool:
    """Whether column `extra` gets its min_width with every other column at its natural width."""
    natural = sum(max([_longest_line(c.header), *(_longest_line(_plain(r[i])) for r in rows)])
                  for i, c in enumerate(cols) if i != extra and not c.extra)
    return natural + max(cols[extra].min_width, 1) + _overhead(len(cols), box, show_edge, pad_edge) <= width


def _safe(cell: Cell) -> Cell:
    """A cell without hidden characters; a styled cell keeps its style."""
    if isinstance(cell, Text):
        plain = clean(cell.plain)
        return cell if plain == cell.plain else Text(plain, style=_whole_style(cell), justify=cell.justify)
    return clean(cell)


def _wrapped(cell: Cell, width: int, col: Col) -> Text:
    if isinstance(cell, Text):
        styled = cell.copy()
        if col.wrap:
            lines = wrap_text(styled.plain, width, col.folds)
            return Text("\n".join(lines), style=_whole_style(styled), justify=styled.justify)
        return styled
    return Text("\n".join(wrap_text(str(cell), width, col.folds)) if col.wrap else str(cell))


def _whole_style(text: Text) -> Any:
    """The style of a cell coloured as a whole ([red]...[/red] markup gives one span)."""
    if text.spans and text.spans[0].start == 0 and text.spans[0].end >= len(text.plain):
        return text.spans[0].style
    return text.style


def hanging(text: Text, width: int, indent: int = 2) -> Text:
    """`text` (one line) wrapped to `width` with every line after the first indented: the
    continuation of a long message from a kernel can never start a line of its own, where it
    could pass for sage's verdict. The style of the text's first span (a red error class) is kept."""
    lines = wrap_text(text.plain, max(width - indent, 1))
    wrapped = Text("\n".join([lines[0], *(" " * indent + line for line in lines[1:])]), style=text.style)
    if text.spans and text.spans[0].start == 0 and len(lines[0]) >= text.spans[0].end:
        wrapped.stylize(text.spans[0].style, 0, text.spans[0].end)
    return wrapped


def markup(text: str) -> Text:
    """A cell from rich markup (e.g. "[green]correct[/green]"): sage's own literals only, never
    text from a kernel, an LLM, a task file or the memory (that is `sage.text.terminal`)."""
    return Text.from_markup(text)


def compact_shape(desc: str) -> str:
    """"float32[4096, 1024]" -> "float32[4096,1024]": one word per tensor, folding at commas."""
    return re.sub(r",\s+", ",", desc)


class Screen:
    """stdout or stderr through a rich Console made at each use, so the width follows this
    invocation's terminal and COLUMNS (a module-level Console would keep the first one's)."""

    def __init__(self, stderr: bool = False) -> None:
        self.stderr = stderr

    def console(self) -> Console:
        return Console(stderr=self.stderr)

    @property
    def width(self) -> int:
        return self.console().width

    def print(self, *objects: Any, **kwargs: Any) -> None:
        self.console().print(*objects, **kwargs)

    def text(self, text: str, style: str | None = None) -> None:
        """Plain text (no markup) wrapped at spaces, paths folding after `/` and `_`: rich alone
        would cut a long path anywhere."""
        console = self.console()
        console.print(Text("\n".join(wrap_text(clean(text), console.width)), style=style or ""), soft_wrap=True,
                      highlight=False)
