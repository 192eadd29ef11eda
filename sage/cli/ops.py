"""`sage ops list`: every task of the suite (and the plain single-operator tasks), with
whether the offline synthesizer has a plan for it."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

from sage.cli.render import Col, fitted_table, markup

app = typer.Typer(help="Operators (tasks) known to sage.", no_args_is_help=True)


@app.command("list", help="List every task with its level, tags and whether the offline synthesizer has a plan.")
def list_ops(
    level: list[int] = typer.Option(None, "--level", "-l", help="only this level (repeatable)"),
    plans: bool = typer.Option(True, "--plans/--no-plans",
                               help="decide which tasks the offline synthesizer has a plan for (cached; the "
                                    "first time compiles every task: 65 s for the suite on 2 cores)"),
    as_json: bool = typer.Option(False, "--json", help="print a JSON list"),
) -> None:
    from sage.bench.tasks import level_of, load_tasks, plain_op_files, suite_files

    files = [f for f in [*suite_files(), *plain_op_files()] if not level or level_of(f) in level]
    entries = []
    for path in files:
        tasks, skipped = load_tasks(path, check_inputs=False)
        for t in tasks:
            entries.append({"name": t.key, "level": t.level, "tags": t.tags, "description": t.description,
                            "fused_op": t.fused_op, "path": str(t.path), "status": "ok"})
        for s in skipped:
            entries.append({"name": s.name, "level": s.level, "tags": [], "description": "",
                            "fused_op": None, "path": s.path, "status": f"{s.kind}: {s.reason}"})
    if plans:
        reasons = _plans([Path(e["path"]) for e in entries if e["status"] == "ok"], quiet=as_json)
        for e in entries:
            reason = reasons.get(Path(e["path"]), "the task does not load")
            e["offline_plan"], e["offline_reason"] = reason is None, reason
    if as_json:
        print(json.dumps(entries))
        return
    console = Console()
    cols = [Col("task"), Col("level", "right", wrap=False), Col("tags")]
    if plans:
        cols.append(Col("offline plan", wrap=False))
    # The description only where it gets a readable column; --json always has it.
    cols.append(Col("description", extra=True, min_width=40))
    rows = []
    for e in entries:
        row = [e["name"], "-" if e["level"] is None else str(e["level"]), ", ".join(e["tags"])]
        if plans:
            row.append(markup("[green]yes[/green]") if e["offline_plan"] else markup("[dim]no[/dim]"))
        row.append(e["description"] if e["status"] == "ok" else markup(f"[red]{e['status']}[/red]"))
        rows.append(row)
    planned = f", {sum(e['offline_plan'] for e in entries)} with an offline plan" if plans else ""
    title = f"{len(entries)} tasks{planned} (--op takes e.g. softmax, layer_norm or level1/10_layer_norm)"
    console.print(fitted_table(cols, rows, console.width, title=title))
    if plans:
        console.print("offline plan: the offline synthesizer (`--model offline`) has a kernel template for every "
                      "case; `sage ops list --json` gives the reason when it has none.", highlight=False)


def _plans(paths: list[Path], quiet: bool) -> dict[Path, str | None]:
    from sage.bench.reference.cache import cache_dir
    from sage.cli.plans import PLANS_FILE, offline_plans

    err = Console(stderr=True)
    with Progress(TextColumn("offline plans"), BarColumn(), MofNCompleteColumn(), console=err,
                  transient=True, disable=quiet) as progress:
        bar = progress.add_task("plans", total=None)

        def on_progress(done: int, total: int) -> None:
            progress.update(bar, completed=done, total=total)

        return offline_plans(paths, cache_dir() / PLANS_FILE, on_progress=on_progress)
