"""`sage bench reference --op NAME`: the torch_npu stand-in's breakdown for one operator.

Registered by `sage/cli/bench.py` as `app.command("reference")(reference_command)`.
Exit codes: 0 printed, 2 bad input (unknown operator or preset, case out of range,
a task that cannot be loaded or whose reference needs an accelerator).
"""

from __future__ import annotations

import json

import typer
from rich import box

from sage.cli.common import fail as _fail
from sage.cli.common import require_cache
from sage.cli.render import Col, Screen, fitted_table

out = Screen()


def reference_command(
    op: str = typer.Option(..., "--op", help="operator name (e.g. softmax, level1/10_layer_norm) or task file"),
    preset: str = typer.Option(None, "--preset", help="hardware preset (default: settings)"),
    case: int = typer.Option(0, "--case", min=0, help="which input case of the task (0-based)"),
    as_json: bool = typer.Option(False, "--json", help="print the ReferenceTime as JSON"),
) -> None:
    """The vendor (torch_npu) eager time of one case: per aten operator, or the fused model."""
    from sage.bench.reference import ReferenceModelError, reference_time
    from sage.bench.tasks import ReferenceUnavailable, TaskLoadError, UnknownOpError, load_task, resolve_op
    from sage.config import load_settings
    from sage.npu.hardware import load_preset

    try:
        task = load_task(resolve_op(op))
    except UnknownOpError as exc:
        _fail(str(exc))
    except TaskLoadError as exc:
        _fail(f"bad task file {exc}")
    except ReferenceUnavailable as exc:
        _fail(str(exc))
    preset_name = load_settings(preset=preset).preset
    try:
        hw = load_preset(preset_name)
    except ValueError as exc:
        _fail(str(exc))
    require_cache()
    cases = task.cases()
    if case >= len(cases):
        _fail(f"{task.key} has {len(cases)} case(s); --case must be below {len(cases)}")
    try:
        ref = reference_time(task, cases[case], hw)
    except ReferenceModelError as exc:
        _fail(f"the reference model failed: {exc}")
    if as_json:
        print(json.dumps(ref.model_dump()))
        return
    _print(task.key, case, ref)


def _print(key: str, case: int, ref) -> None:
    title = f"{key} case {case} on {ref.preset}: {ref.total_us:.2f} µs, {ref.launches} launch(es)"
    if ref.fused:
        title += f" — fused {ref.fused_op}"
    # Names fold after . and _ (aten overloads), shapes after their x.
    cols = [Col("#", "right", wrap=False), Col("op", folds="._"), Col("shapes", folds="x"), Col("dtypes"),
            Col("class", folds="_"), Col("µs", "right", wrap=False), Col("source", folds="_"),
            Col("kernel / formula", folds="/_(,")]
    rows = []
    for i, row in enumerate(ref.ops):
        shapes = " ".join("x".join(map(str, s)) or "()" for s in row.shapes)
        dts = " ".join(sorted(set(row.dtypes), key=row.dtypes.index))
        formula = row.kernel + (f" eff={row.efficiency:.3f}" if row.efficiency is not None else "")
        rows.append([str(i), row.op, shapes, dts, row.op_class, f"{row.time_us:.2f}", row.source, formula])
    # No outer border: eight columns of names need the room at 80 columns.
    out.print(fitted_table(cols, rows, out.width, title=title, title_justify="left", box=box.SIMPLE_HEAD,
                           show_edge=False, pad_edge=False))
    for note in ref.notes:
        out.text(f"note: {note}")
