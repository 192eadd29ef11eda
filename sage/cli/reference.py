"""`sage bench reference --op NAME | --task FILE`: vendor, expert and roofline, per case and per op.

Registered by `sage/cli/bench.py` as `app.command("reference")(reference_command)`.
`--json` prints one object: {"task", "preset", "fused_op", "cases": [...]}, each case with
the three times (docs/evaluation.md) `kernel_us`, `device_us` and `end_to_end_us` (the
scored vendor time), `expert_device_us`, `expert_end_to_end_us`, `roofline_us`
(+ `roofline_bound`), the split (`device_fixed_us`, `host_exposed_us`, `host_dispatch_us`,
`sync_us`), `launches`, `syncs`
and the per-op rows `ops` (vendor `device_us`, `expert_device_us`, `roofline_us`, `unit` (aicore,
aicpu or both), `kernels` and `path`: sage/bench/reference/kernel_paths.py, ...).
Exit codes: 0 printed, 2 bad input (unknown operator or preset, case out of range, a task
that cannot be loaded or whose reference needs an accelerator).
"""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich import box

from sage.cli.common import fail as _fail
from sage.cli.common import require_cache
from sage.cli.progress import bar
from sage.cli.render import IDENT, Col, Screen, fitted_table

out = Screen()
_CASE_FIELDS = ("kernel_us", "device_us", "end_to_end_us", "expert_device_us", "expert_end_to_end_us", "roofline_us",
                "roofline_bound", "device_fixed_us", "host_exposed_us", "host_dispatch_us", "sync_us",
                "launches", "syncs", "expert_ops", "fused", "notes")


def reference_command(
    op: str = typer.Option(None, "--op", help="operator name (e.g. softmax, level1/10_layer_norm)"),
    task_file: Path = typer.Option(None, "--task", help="a task file"),
    preset: str = typer.Option(None, "--preset", help="hardware preset (default: settings)"),
    case: int = typer.Option(None, "--case", min=0, help="only case K (0-based); default every case"),
    expert: bool = typer.Option(True, "--expert/--no-expert",
                                help="also time the expert library kernels in the simulator (slower)"),
    as_json: bool = typer.Option(False, "--json", help="print one JSON object"),
) -> None:
    """The vendor (torch_npu) time per case beside the expert library kernels and the roofline."""
    from sage.bench.input_size import InputsTooLarge
    from sage.bench.reference import ReferenceModelError, reference_time
    from sage.bench.tasks import ReferenceUnavailable, TaskLoadError, UnknownOpError, load_task, resolve_op
    from sage.config import load_settings
    from sage.npu.hardware import load_preset

    if (op is None) == (task_file is None):
        _fail("give exactly one of --op NAME or --task FILE")
    try:
        task = load_task(task_file if task_file is not None else resolve_op(op))
    except UnknownOpError as exc:
        _fail(str(exc))
    except TaskLoadError as exc:
        _fail(f"bad task file {exc}")
    except ReferenceUnavailable as exc:
        _fail(str(exc))
    except InputsTooLarge as exc:
        _fail(f"no case of {op or task_file} can be made: {exc.reason}")
    preset_name = load_settings(preset=preset).preset
    try:
        hw = load_preset(preset_name)
    except ValueError as exc:
        _fail(str(exc))
    require_cache()
    cases = task.cases()
    if case is not None and case >= len(cases):
        _fail(f"{task.key} has {len(cases)} case(s); --case must be below {len(cases)}")
    indices = [case] if case is not None else list(range(len(cases)))
    refs = []
    try:
        with bar(as_json) as progress:    # ended before an error is printed: on a line of its own
            timing = progress.add_task("timing cases", total=len(indices))
            for i in indices:
                refs.append((i, reference_time(task, cases[i], hw, expert=expert)))
                progress.advance(timing)
    except ReferenceModelError as exc:
        _fail(f"the reference model failed: {exc}")
    if as_json:
        print(json.dumps(payload(task.key, hw.name, refs)))
        return
    for i, ref in refs:
        _print(task.key, i, ref)


def payload(key: str, preset: str, refs: list) -> dict:
    first = refs[0][1] if refs else None
    return {"task": key, "preset": preset, "fused_op": first.fused_op if first else None,
            "cases": [{"case": i, **{f: getattr(r, f) for f in _CASE_FIELDS},
                       "ops": [o.model_dump(mode="json") for o in r.ops]} for i, r in refs]}


def _us(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}"


def _print(key: str, case: int, ref) -> None:
    title = (f"{key} case {case} on {ref.preset}: vendor {ref.kernel_us:.2f} µs kernel, {ref.device_us:.2f} µs "
             f"device (event-timed span: {ref.device_fixed_us:.2f} µs of launch fixed cost, gaps included), "
             f"{ref.end_to_end_us:.2f} µs end to end (host exposed {ref.host_exposed_us:.2f}); "
             f"expert device {_us(ref.expert_device_us)} µs "
             f"({ref.expert_ops} op(s) with a library kernel); essential-work bound {ref.roofline_us:.2f} µs "
             f"({ref.roofline_bound} bound: what a roofline fraction divides); {ref.launches} launch(es), "
             f"{ref.syncs} sync(s)")
    if ref.fused:
        title += f" — fused {ref.fused_op}"
    # Two tables so no name is cut at 80 columns: what each op is, then what it costs. Op names
    # stay whole (IDENT), shapes fold after their x.
    cols = [Col("#", "right", wrap=False), Col("op", folds=IDENT), Col("shapes", folds="x"), Col("dtypes"),
            Col("class", folds=IDENT), Col("unit", folds="+")]
    rows = []
    for i, row in enumerate(ref.ops):
        shapes = " ".join("x".join(map(str, s)) or "()" for s in row.shapes)
        dts = " ".join(sorted(set(row.dtypes), key=row.dtypes.index))
        klass = row.op_class if row.group is None else f"{row.op_class} ({row.group})"
        unit = row.unit if row.kernels <= 1 else f"{row.kernels}: {row.unit}"
        rows.append([str(i), row.op, shapes, dts, klass, unit])
    out.print(fitted_table(cols, rows, out.width, title=title, title_justify="left", box=box.SIMPLE_HEAD,
                           show_edge=False, pad_edge=False))
    cols = [Col("#", "right", wrap=False), *(Col(c, "right") for c in ("vendor µs", "expert µs", "op roofline µs")),
            Col("bound", wrap=False), Col("L2 hit MB", "right"), Col("sync", wrap=False)]
    rows = [[str(i), _us(row.device_us), _us(row.expert_device_us), _us(row.roofline_us), row.bound,
             f"{row.l2_hit_bytes / 1e6:.2f}", "yes" if row.sync else ""] for i, row in enumerate(ref.ops)]
    out.print(fitted_table(cols, rows, out.width, box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False))
    for note in ref.notes:
        out.text(f"note: {note}")
