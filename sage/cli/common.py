"""What every command shares: the one-line error, checks of the places sage writes to, and
"did you mean" for names.

A command that will write under HOME (the memory, the reference timing cache) checks first
that it can: an unwritable HOME or memory folder is a one-line error with exit code 2,
never a traceback halfway through the work, nor a silent "-" where a figure should be.
"""

from __future__ import annotations

import difflib
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any, NoReturn

import click
import typer
from rich.console import Console
from typer.core import TyperGroup
from rich.text import Text

from sage.text import terminal

BAD_INPUT = 2
# Every Typer app of the CLI: no shell-completion options in --help (typer's own, not sage's),
# and click's plain help, which wraps at spaces and never crops a word (typer's rich panels
# cut an option's help at the panel's edge: "level1/10_layer_n…").
APP_SETTINGS: dict = {"add_completion": False, "rich_markup_mode": None}


class WholeHelpGroup(TyperGroup):
    """A command group whose --help lists each command with its whole first paragraph, wrapped
    at spaces (click cuts it at 45 characters or so: "generate, evaluate,...")."""

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = []
        for name in self.list_commands(ctx):
            command = self.get_command(ctx, name)
            if command is not None and not command.hidden:
                text = (command.short_help or command.help or "").split("\n\n")[0]
                rows.append((name, " ".join(text.split())))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)
HOME_HINT = "set HOME (or SAGE_CACHE_DIR / --memory-url) to a writable place"


def fail(message: str, code: int = BAD_INPUT) -> NoReturn:
    """`error: message` on stderr, on a line of its own. On a terminal it is wrapped at spaces
    (a URL or a path is never split, later lines indented); redirected, it is one line, for
    grep. The message often quotes a file, a task or a kernel: it is cleaned and never read
    as markup (sage/text.py)."""
    from sage.cli.render import hanging

    console = Console(stderr=True)
    text = Text.assemble(("error:", "red"), " ", terminal(message, one_line=True))
    console.print(hanging(text, console.width) if console.is_terminal else text, highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def writable_problem(folder: Path) -> str | None:
    """None when files can be created in `folder` (made if missing), else why not. The test
    writes a file: permission bits say nothing for root or on a read-only mount."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".sage-write-check-"):
            pass
    except OSError as exc:
        return exc.strerror or type(exc).__name__
    return None


def require_writable(folder: Path, what: str) -> None:
    problem = writable_problem(folder)
    if problem is not None:
        fail(f"cannot write {what} in {folder}: {problem}; {HOME_HINT}")


def require_cache() -> None:
    """The reference timing cache (~/.sage/cache, or SAGE_CACHE_DIR) must be writable."""
    from sage.bench.reference.cache import cache_dir

    require_writable(cache_dir(), "the reference timing cache")


def require_memory(url: str) -> None:
    """A SQLite memory's folder, and the database file if it exists, must be writable
    (SQLite writes its journal beside the file even to read in WAL mode)."""
    from sage.memory.engine import sqlite_path

    path = sqlite_path(url)
    if path is None:
        return
    require_writable(path.parent, "the memory database")
    if path.exists() and not os.access(path, os.W_OK):
        fail(f"the memory database {path} is read-only; {HOME_HINT}")


def did_you_mean(name: str, known: Iterable[str], n: int = 3) -> str:
    """" (did you mean softmax?)" for the nearest known names, or ""."""
    close = difflib.get_close_matches(name, sorted(set(known)), n=n, cutoff=0.6)
    return f" (did you mean {' or '.join(close)}?)" if close else ""


def run_budget(max_tokens: int | None, max_cost: float | None, prices: str | None, ledger: Path | None = None) -> Any:
    """The run budget of --max-tokens/--max-cost/--prices (None when neither limit is given);
    with `ledger`, one shared by worker processes through that file, starting from nothing spent."""
    from sage.agent.budget import LedgerBudget, Prices, RunBudget

    if max_cost is not None and prices is None:
        fail("--max-cost needs the model's --prices PROMPT,COMPLETION (US$ per million tokens)")
    try:
        parsed = Prices.parse(prices) if prices is not None else None
    except ValueError as exc:
        fail(f"--prices: {exc}")
    if max_tokens is None and max_cost is None:
        return None
    if ledger is None:
        return RunBudget(max_tokens=max_tokens, max_cost=max_cost, prices=parsed)
    budget = LedgerBudget(max_tokens=max_tokens, max_cost=max_cost, prices=parsed, ledger=ledger)
    budget.reset()
    return budget
