"""`sage memory`: inspect, show, export, import, reset and stats of the experience memory.

Exit codes: 0 done, 2 bad input (bad URL, unknown id, malformed import file, missing --yes).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, NoReturn

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

app = typer.Typer(help="The experience memory: what the agent has learned.", no_args_is_help=True)


def _console(stderr: bool = False) -> Console:
    # Made per call, so the width follows the terminal (and COLUMNS) of this invocation.
    return Console(stderr=stderr)

EMPTY_HINT = "The memory is empty: run `sage synth --op softmax` to teach it something."
URL_OPTION = typer.Option(None, "--memory-url", help="SQLAlchemy URL (default: SAGE_MEMORY_URL or sqlite:///~/.sage/memory.db)")


def fail(message: str, code: int = 2) -> NoReturn:
    # One line whatever the width, and a file name with brackets is not read as markup.
    _console(stderr=True).print(f"[red]error:[/red] {escape(message)}", highlight=False, markup=True,
                                soft_wrap=True)
    raise typer.Exit(code)


def _open(url: str | None):  # type: ignore[no-untyped-def]
    from sage.config import load_settings
    from sage.memory import Memory, MemoryStoreError

    try:
        return Memory(load_settings(memory_url=url).memory_url)
    except MemoryStoreError as exc:
        fail(str(exc))


def _print_json(data: Any) -> None:
    typer.echo(json.dumps(data, indent=2, default=str))


@app.command("inspect", help="The experiences by utility, or with --rules the resident rule set.")
def inspect(
    top: int = typer.Option(20, "--top", min=1, help="show the N most useful experiences"),
    rules: bool = typer.Option(False, "--rules", help="show the rules (resident and demoted) instead"),
    op: str = typer.Option(None, "--op", help="only experiences from or adopted on this operator"),
    as_json: bool = typer.Option(False, "--json", help="print JSON"),
    memory_url: str = URL_OPTION,
) -> None:
    with _open(memory_url) as memory:
        exps = memory.experiences(top=top, operator=op)
        all_rules = memory.rules()
        operators = memory.operator_counts()
        budget = memory.config.token_budget
        empty = memory.is_empty()
    resident = [r for r in all_rules if r.status == "resident"]
    used = sum(r.tokens for r in resident)
    if as_json:
        _print_json({
            "experiences": [e.model_dump() | {"operators": operators.get(e.id, 0)} for e in exps],
            "rules": [r.model_dump() for r in all_rules], "resident_tokens": used, "token_budget": budget,
        })
        return
    if empty:
        _console().print(EMPTY_HINT)
        return
    if rules:
        table = Table(title=f"Rules — resident {len(resident)}, {used}/{budget} tokens")
        for column in ("id", "rule", "utility", "adopted/shown", "tokens", "sources", "status"):
            table.add_column(column, overflow="fold")
        for r in all_rules:
            table.add_row(r.id, r.text, f"{r.utility:+.3f}", f"{r.adopted}/{r.shown}", str(r.tokens),
                          " ".join(r.sources), r.status)
        _console().print(table if all_rules else "No rules yet: experiences become rules once they help on several operators.")
        return
    if not exps:
        _console().print(f"No experiences for operator {op!r}." if op else EMPTY_HINT)
    else:
        table = Table(title="Experiences" + (f" for {op}" if op else ""))
        for column in ("id", "title", "utility", "adopted/retrieved", "operators", "status"):
            table.add_column(column, overflow="fold")
        for e in exps:
            table.add_row(e.id, e.title, f"{e.utility:+.3f}", f"{e.adopted}/{e.retrieved}",
                          str(operators.get(e.id, 0)), e.status)
        _console().print(table)
    _console().print(f"Resident rules: {len(resident)} ({used}/{budget} tokens); see --rules.")


@app.command("show", help="One experience (E<n>) or rule (R<n>) with its adoption history.")
def show(
    item: str = typer.Argument(..., help="an id such as E12 or R3"),
    as_json: bool = typer.Option(False, "--json", help="print JSON"),
    memory_url: str = URL_OPTION,
) -> None:
    from sage.memory import UnknownItemError

    with _open(memory_url) as memory:
        try:
            detail = memory.show(item)
        except UnknownItemError as exc:
            fail(str(exc))
    if as_json:
        _print_json(detail.model_dump(mode="json"))
        return
    if detail.experience is not None:
        e = detail.experience
        _console().print(f"[bold]{e.id}[/bold] {e.title}  [dim]({e.status}, from {e.origin_operator})[/dim]")
        _console().print(e.advice, highlight=False)
        _console().print(f"tags: {', '.join(e.tags) or '-'}   hints: {json.dumps(e.hints) if e.hints else '-'}")
        _console().print(f"utility {e.utility:+.3f}   retrieved {e.retrieved}   adopted {e.adopted} "
                  f"(succeeded {e.adopted_succeeded})   operators {len(detail.operators)}")
    else:
        r = detail.rule
        assert r is not None
        _console().print(f"[bold]{r.id}[/bold] [dim]({r.status}, {r.tokens} tokens, from {' '.join(r.sources)})[/dim]")
        _console().print(r.text, highlight=False)
        _console().print(f"utility {r.utility:+.3f}   shown {r.shown}   adopted {r.adopted} (succeeded {r.adopted_succeeded})")
    if not detail.history:
        _console().print("Never adopted.")
        return
    table = Table(title="Adoption history")
    for column in ("episode", "operator", "mode", "attempt", "reward", "reason"):
        table.add_column(column, overflow="fold")
    for h in detail.history:
        table.add_row(str(h.episode_id), h.task, h.mode, str(h.attempt),
                      "-" if h.reward is None else f"{h.reward:+.3f}", h.reason)
    _console().print(table)


@app.command("export", help="Write the whole memory to a JSON file (import round-trips it exactly).")
def export(file: Path = typer.Argument(..., help="output JSON file"), memory_url: str = URL_OPTION) -> None:
    with _open(memory_url) as memory:
        data = memory.export_data()
    try:
        file.write_text(json.dumps(data, indent=1), encoding="utf-8")
    except OSError as exc:
        fail(f"cannot write {file}: {exc.strerror}")
    counts = ", ".join(f"{len(rows)} {name}" for name, rows in data["tables"].items())
    _console().print(f"exported {counts} to {file}", highlight=False)


@app.command("import", help="Load a JSON export into an empty memory (or --replace the current content).")
def import_(
    file: Path = typer.Argument(..., help="a file written by `sage memory export`"),
    replace: bool = typer.Option(False, "--replace", help="delete the current memory first (one transaction)"),
    memory_url: str = URL_OPTION,
) -> None:
    from sage.memory import MemoryStoreError
    from sage.memory.transfer import read_export

    try:
        data = read_export(file)
    except OSError as exc:
        fail(f"cannot read {file}: {exc.strerror}")
    except MemoryStoreError as exc:
        fail(f"{file}: {exc}")
    with _open(memory_url) as memory:
        try:
            counts = memory.import_data(data, replace=replace)
        except MemoryStoreError as exc:
            fail(f"{file}: {exc}")
    _console().print(f"imported {', '.join(f'{n} {name}' for name, n in counts.items())}", highlight=False)


@app.command("reset", help="Delete everything the memory holds (needs --yes).")
def reset(
    yes: bool = typer.Option(False, "--yes", help="really delete every experience, rule and episode"),
    memory_url: str = URL_OPTION,
) -> None:
    if not yes:
        fail("reset deletes every experience, rule and episode; run again with --yes (export first to keep a copy)")
    with _open(memory_url) as memory:
        memory.reset()
    _console().print("memory reset")


@app.command("stats", help="Counts: experiences and rules by status, episodes by mode, reward.")
def stats(as_json: bool = typer.Option(False, "--json", help="print JSON"), memory_url: str = URL_OPTION) -> None:
    with _open(memory_url) as memory:
        s = memory.stats()
        url = memory.engine.url.render_as_string(hide_password=True)
    if as_json:
        _print_json(s.model_dump() | {"url": url})
        return
    table = Table(title=f"Memory {url}", show_header=False)
    table.add_column("what")
    table.add_column("value")
    fmt = lambda counts: ", ".join(f"{n} {k}" for k, n in sorted(counts.items())) or "0"  # noqa: E731
    table.add_row("experiences", fmt(s.experiences))
    table.add_row("rules", fmt(s.rules))
    table.add_row("resident tokens", f"{s.resident_tokens}/{s.token_budget} (cap {s.rule_cap} rules)")
    table.add_row("episodes", f"{s.episodes} ({fmt(s.episodes_by_mode)})" if s.episodes else "0")
    if s.episodes:
        table.add_row("correct", f"{s.correct_rate:.0%}")
        table.add_row("mean reward", f"{s.mean_reward:+.3f}")
    table.add_row("adoptions / retrievals", f"{s.adoptions} / {s.retrievals}")
    _console().print(table)
    if not s.episodes and not sum(s.experiences.values()):
        _console().print(EMPTY_HINT)
