"""`sage ops list`: every task of the suite (and the plain single-operator tasks)."""

from __future__ import annotations

import json

import typer
from rich.console import Console
from rich.table import Table

app = typer.Typer(help="Operators (tasks) known to sage.", no_args_is_help=True)
err = Console(stderr=True)


@app.command("list", help="List every task with its level and tags.")
def list_ops(
    level: list[int] = typer.Option(None, "--level", "-l", help="only this level (repeatable)"),
    as_json: bool = typer.Option(False, "--json", help="print a JSON list"),
) -> None:
    from sage.bench.tasks import load_tasks, plain_op_files, suite_files

    entries = []
    for path in [*suite_files(), *plain_op_files()]:
        tasks, skipped = load_tasks(path, check_inputs=False)
        for t in tasks:
            entries.append({"name": t.key, "level": t.level, "tags": t.tags, "description": t.description,
                            "fused_op": t.fused_op, "path": str(t.path), "status": "ok"})
        for s in skipped:
            entries.append({"name": s.name, "level": s.level, "tags": [], "description": "",
                            "fused_op": None, "path": s.path, "status": f"{s.kind}: {s.reason}"})
    if level:
        entries = [e for e in entries if e["level"] in level]
    if as_json:
        print(json.dumps(entries))
        return
    console = Console()
    # The description only fits wide terminals; the tags always get room.
    wide = console.width >= 140
    table = Table(title=f"{len(entries)} tasks (--op takes e.g. softmax, layer_norm or level1/10_layer_norm)")
    table.add_column("task", overflow="fold", max_width=48)
    table.add_column("level", no_wrap=True)
    table.add_column("tags", overflow="fold", min_width=20)
    if wide:
        table.add_column("description", overflow="fold")
    for e in entries:
        desc = e["description"] if e["status"] == "ok" else f"[red]{e['status']}[/red]"
        row = [e["name"], "-" if e["level"] is None else str(e["level"]), ", ".join(e["tags"])]
        if wide:
            row.append(desc if len(desc) < 90 else desc[:87] + "...")
        table.add_row(*row)
    console.print(table)
