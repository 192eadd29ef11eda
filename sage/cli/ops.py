"""`sage ops list`: every task of the suite (and the plain single-operator tasks), with
whether the offline synthesizer has a plan for it.

The list itself answers in seconds. Whether the offline synthesizer has a plan takes a
compile of every task (about a minute the first time), so a plain `sage ops list` shows
only what the cache already knows, and `--plans` decides the rest (sage/cli/plans.py).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer
from rich.console import Console

from sage.cli.common import APP_SETTINGS, WholeHelpGroup
from sage.cli.progress import bar
from sage.cli.render import IDENT, Col, fitted_table, markup

app = typer.Typer(help="Operators (tasks) known to sage.", no_args_is_help=True, cls=WholeHelpGroup,
                  **APP_SETTINGS)

PLANS_HELP = ("decide which tasks the offline synthesizer has a plan for: compiles every task not decided yet "
              "(about a minute for the whole suite on 2 cores the first time; cached). Without it the column shows "
              "what is cached; --no-plans hides it")


@app.command("list", help="List every task with its level, tags and whether the offline synthesizer has a plan.")
def list_ops(
    level: list[int] = typer.Option(None, "--level", "-l", help="only this level (repeatable)"),
    plans: bool = typer.Option(None, "--plans/--no-plans", help=PLANS_HELP, show_default=False),
    as_json: bool = typer.Option(False, "--json", help="print a JSON list (offline_plan: true, false, or null "
                                                       "when not decided yet)"),
) -> None:
    from sage.bench.tasks import level_of, plain_op_files, suite_files

    files = [f for f in [*suite_files(), *plain_op_files()] if not level or level_of(f) in level]
    entries = _entries(files, as_json)
    if plans is not False:
        reasons = _plans([Path(e["path"]) for e in entries if e["status"] == "ok"], decide=bool(plans), quiet=as_json)
        for e in entries:
            reason = reasons.get(Path(e["path"]), "the task does not load")
            decided = reason is None or isinstance(reason, str)
            e["offline_plan"] = (reason is None) if decided else None
            e["offline_reason"] = reason if isinstance(reason, str) else None
    if as_json:
        print(json.dumps(entries))
        return
    _print(entries, show_plans=plans is not False)


def _entries(files: list[Path], as_json: bool) -> list[dict[str, Any]]:
    from sage.bench.tasks import load_tasks

    entries = []
    progress = bar(as_json)
    with progress:
        loading = progress.add_task("loading tasks", total=len(files))
        for path in files:
            tasks, skipped = load_tasks(path, check_inputs=False)
            for t in tasks:
                entries.append({"name": t.key, "level": t.level, "tags": t.tags, "description": t.description,
                                "fused_op": t.fused_op, "path": str(t.path), "status": "ok"})
            for s in skipped:
                entries.append({"name": s.name, "level": s.level, "tags": [], "description": "",
                                "fused_op": None, "path": s.path, "status": f"{s.kind}: {s.reason}"})
            progress.advance(loading)
    return entries


def _print(entries: list[dict[str, Any]], show_plans: bool) -> None:
    console = Console()
    undecided = sum(e.get("offline_plan", False) is None for e in entries)
    show_plans = show_plans and undecided < len(entries)      # a column of question marks says nothing
    # Task names are copied into commands: never split (IDENT); the other columns fold first.
    cols = [Col("task", folds=IDENT), Col("level", "right", wrap=False), Col("tags")]
    if show_plans:
        cols.append(Col("offline plan", wrap=False))
    # The description only where it gets a readable column; --json always has it.
    cols.append(Col("description", extra=True, min_width=40))
    rows = []
    for e in entries:
        row = [e["name"], "-" if e["level"] is None else str(e["level"]), ", ".join(e["tags"])]
        if show_plans:
            plan = e.get("offline_plan")
            row.append(markup("[green]yes[/green]") if plan else markup("[dim]no[/dim]") if plan is False else "?")
        row.append(e["description"] if e["status"] == "ok" else markup(f"[red]{e['status']}[/red]"))
        rows.append(row)
    planned = f", {sum(bool(e.get('offline_plan')) for e in entries)} with an offline plan" if show_plans else ""
    title = f"{len(entries)} tasks{planned} (--op takes e.g. softmax, layer_norm or level1/10_layer_norm)"
    console.print(fitted_table(cols, rows, console.width, title=title))
    if show_plans:
        console.print("offline plan: the offline synthesizer (`--model offline`) has a kernel template for every "
                      "case; `sage ops list --json` gives the reason when it has none.", highlight=False)
    if undecided:
        console.print(f"{undecided} task(s) not decided yet{' (?)' if show_plans else ''}: `sage ops list --plans` "
                      "decides whether the offline synthesizer has a plan for them (about a minute for the whole "
                      "suite the first time, then cached).", highlight=False)


def _plans(paths: list[Path], *, decide: bool, quiet: bool) -> dict[Path, Any]:
    from sage.bench.reference.cache import cache_dir
    from sage.cli.plans import PLANS_FILE, cached_plans, offline_plans

    cache = cache_dir() / PLANS_FILE
    if not decide:
        return cached_plans(paths, cache)
    progress = bar(quiet)
    with progress:
        deciding = progress.add_task("offline plans", total=None)

        def on_progress(done: int, total: int) -> None:
            progress.update(deciding, completed=done, total=total)

        return offline_plans(paths, cache, on_progress=on_progress)
