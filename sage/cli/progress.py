"""Progress of long work: on stderr, only on a terminal, never with --json.

stdout holds results (tables, summaries, JSON), so a command's output can be piped or
redirected whole; progress is for the person watching. Redirected or with --json, progress
shows nothing at all: a bar's last frame in a log file is noise, and with --json stderr
carries only errors.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.live import Live
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn


def watching(as_json: bool = False) -> Console | None:
    """The stderr console when someone watches it (a terminal, no --json), else None."""
    console = Console(stderr=True)
    return console if console.is_terminal and not as_json else None


def bar(as_json: bool = False, *, detail: bool = False, transient: bool = True) -> Progress:
    """Bars with a count and the elapsed time, each labelled by its task's description; `detail`
    adds a last column fed by the `last` field (e.g. the task just finished). Disabled unless
    watched."""
    console = watching(as_json)
    columns: list[Any] = [TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                          TimeElapsedColumn()]
    if detail:
        columns.append(TextColumn("{task.fields[last]}", markup=False))
    # stdout is never redirected through the bar: it holds the command's results.
    return Progress(*columns, console=console or Console(stderr=True), transient=transient,
                    disable=console is None, redirect_stdout=False, redirect_stderr=False)


def live(renderable: Any, as_json: bool = False) -> Live:
    """A display redrawn in place on stderr while work goes on (cleared when it ends: the
    command prints its result to stdout). Draws nothing unless watched."""
    console = watching(as_json)
    return Live(renderable, console=console or Console(stderr=True, quiet=True), refresh_per_second=4,
                auto_refresh=console is not None, transient=True, redirect_stdout=False, redirect_stderr=False)
