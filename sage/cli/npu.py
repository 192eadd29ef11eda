"""`sage npu run` (evaluate one hand-written kernel, with a profile) and `sage npu presets`.

Exit codes of `run`: 0 the kernel is correct on every case, 1 it failed or is wrong,
2 bad input (missing file, malformed task, unknown option value).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer
from rich import box
from rich.markup import escape
from rich.text import Text

from sage.cli.common import APP_SETTINGS, WholeHelpGroup, fail, require_cache
from sage.cli.printed import printed_by_case, show_printed
from sage.cli.progress import bar
from sage.cli.render import Col, Screen, compact_shape, fitted_table, hanging, markup
from sage.text import json_safe, terminal

app = typer.Typer(help="The simulated NPU: run kernels, list hardware presets.", no_args_is_help=True,
                  cls=WholeHelpGroup, **APP_SETTINGS)
err = Screen(stderr=True)
out = Screen()


@app.command("run", help="Run a kernel file against a task's reference: correctness and profile.")
def run(
    kernel: Path = typer.Argument(..., help="the kernel file (DSL, see docs)"),
    task_file: Path = typer.Option(None, "--task", help="a task file (KernelBench format)"),
    op: str = typer.Option(None, "--op", help="an operator name, e.g. softmax or level1/10_layer_norm"),
    preset: str = typer.Option(None, "--preset", help="hardware preset (see `sage npu presets`)"),
    case: int = typer.Option(None, "--case", min=0, help="evaluate only case K (0-based); default all"),
    seed: int = typer.Option(None, "--seed", help="seed of the case inputs (default: settings, 0); with --case "
                                                 "replays a bench row's case"),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="show what the kernel printed (printf, DumpTensor, "
                                                                "print), truncated"),
    trace: Path = typer.Option(None, "--trace", help="write a Chrome/Perfetto trace of the first case here"),
    as_json: bool = typer.Option(False, "--json", help="print one JSON object"),
) -> None:
    from sage.bench.evaluate import evaluate_kernel
    from sage.bench.input_size import InputsTooLarge
    from sage.bench.tasks import ReferenceUnavailable, TaskLoadError, UnknownOpError, load_task, resolve_op
    from sage.config import load_settings
    from sage.npu.hardware import load_preset

    if not kernel.is_file():
        fail(f"{kernel}: no such kernel file")
    if (task_file is None) == (op is None):
        fail("give exactly one of --task FILE or --op NAME")
    try:
        path = task_file if task_file is not None else resolve_op(op)
        task = load_task(path)
    except UnknownOpError as exc:
        fail(str(exc))
    except TaskLoadError as exc:
        fail(f"bad task file {exc}")
    except ReferenceUnavailable as exc:
        fail(str(exc))
    except InputsTooLarge as exc:
        fail(f"{path}: no case can be made: {exc.reason}")
    settings = load_settings(preset=preset, seed=seed)
    preset_name = settings.preset
    try:
        load_preset(preset_name)
    except ValueError as exc:
        fail(str(exc))
    require_cache()
    task.seed = settings.seed
    progress = bar(as_json)
    with progress:
        judging = progress.add_task("judging cases", total=None)
        evaluation = evaluate_kernel(task, kernel.read_text(encoding="utf-8", errors="replace"), preset=preset_name,
                                     cases=[case] if case is not None else None, filename=kernel.name,
                                     trace=trace is not None,
                                     on_case=lambda done, total: progress.update(judging, completed=done, total=total))
    if evaluation.status in ("reference_unavailable", "reference_error", "unsupported"):
        fail(f"{task.path}: {evaluation.status.replace('_', ' ')}: {evaluation.reason}")
    trace_note = _write_trace(trace, evaluation) if trace is not None else None
    payload = run_payload(evaluation, seed=task.seed, preset=preset_name)
    payload["trace_file"] = str(trace) if trace_note is None and trace is not None else None
    if as_json:
        print(json.dumps(json_safe(payload)))
    else:
        _print_run(task.key, preset_name, evaluation, payload, verbose)
        if trace is not None:
            err.print(trace_note or f"trace written to {escape(str(trace))} (open it in https://ui.perfetto.dev "
                                    f"or chrome://tracing)", highlight=False)
        if evaluation.isolation_gaps:   # said once, not per case
            err.print(Text.assemble(("note:", "yellow"), " the sandbox could not apply every isolation layer here: ",
                                    terminal("; ".join(evaluation.isolation_gaps))), highlight=False)
    raise typer.Exit(0 if evaluation.correct else 1)


def run_payload(evaluation: Any, *, seed: int, preset: str) -> dict:
    """The JSON object of `sage npu run --json`. Per case (`cases`): `times` (the kernel's
    `kernel_us`, `device_us` and `end_to_end_us`, the scored one: docs/evaluation.md),
    `reference_times` (the vendor's three), `roofline_fraction` and both speedups (end to end,
    device). At the top level: the same as geometric means over the evaluated cases
    (`speedup` is the end-to-end one; `roofline_fraction` is the task's: the mean over its
    correct timed cases, as every command shows it), and the profile of the first case (the one traced:
    `cycles`, `pipes`, `bottleneck`, `bytes`, `launches`, the roofline bound used), `printed` what the kernel printed per case."""
    from sage import __version__
    from sage.bench.evaluate import geomean
    from sage.npu.timeline import Times

    first = evaluation.cases[0] if evaluation.cases else None
    profile = first.profile if first else None
    cases = evaluation.cases

    def gm(side: str) -> dict[str, float | None]:
        per_case = [getattr(c, side) for c in cases]
        return {kind: geomean([getattr(t, kind) if t else None for t in per_case]) if cases else None
                for kind in Times.model_fields}

    return {
        "task": evaluation.task,
        "sage_version": __version__,
        "preset": preset,
        "seed": seed,
        "correct": evaluation.correct,
        "status": evaluation.status,
        "error": evaluation.error.model_dump() if evaluation.error else None,
        "reason": evaluation.reason,
        "case": first.index if first else None,
        "times": gm("times"),
        "roofline_fraction": evaluation.roofline_fraction,
        "roofline_bound_of_task": evaluation.roofline_bound,
        "reference_times": gm("reference_times"),
        "speedup": evaluation.speedup,
        "device_speedup": evaluation.device_speedup,
        "cycles": profile.cycles if profile else None,
        "pipes": {k: v.model_dump() for k, v in profile.pipes.items()} if profile else None,
        "bottleneck": profile.bottleneck if profile else None,
        "roofline_bound_us": profile.roofline_bound_us if profile else None,
        "roofline_bound": profile.roofline_bound if profile else None,
        "bytes": profile.bytes if profile else None,
        "launches": profile.launches if profile else None,
        "host_dispatch_us": profile.host_dispatch_us if profile else None,
        "device_fixed_us": profile.device_fixed_us if profile else None,
        "cases": [c.model_dump(mode="json", exclude={"profile"}) for c in cases],
        "printed": printed_by_case(evaluation.cases),
        "isolation_gaps": evaluation.isolation_gaps,
    }


def _write_trace(path: Path, evaluation: Any) -> str | None:
    """Writes the first traced case; None when written, else the note saying why not."""
    events = next((c.trace for c in evaluation.cases if c.trace), None)
    if events is None:
        return "[yellow]note:[/yellow] no trace written: the kernel did not run to completion on any case"
    try:
        path.write_text(json.dumps({"traceEvents": events, "displayTimeUnit": "ns"}))
    except OSError as exc:
        fail(f"{path}: cannot write the trace ({exc.strerror or exc})")
    return None


def _print_run(key: str, preset: str, evaluation: Any, payload: dict, verbose: bool) -> None:
    # The task key is a file name and the error is the kernel's: Text, never markup, and one line
    # each, so a kernel cannot draw a verdict line of its own (sage/text.py).
    from sage.bench.roofline import roofline_text as roofline  # (sage memory never loads sage.bench)

    verdict = ("correct", "green") if evaluation.correct else (evaluation.status, "red")
    out.print(Text.assemble(terminal(key), f" on {preset} (seed {payload['seed']}): ", verdict), highlight=False)
    if evaluation.error:
        e = evaluation.error
        first, *quoted = e.message.split("\n") if e.type == "KernelSyntaxError" else [e.message]
        line = Text.assemble(terminal(e.type, "red", one_line=True), f" (line {e.line})" if e.line else "", ": ",
                             terminal(first, one_line=True))
        out.print(hanging(line, out.width), highlight=False, soft_wrap=True)
        for quote in excerpt(quoted, out.width - 4):   # the kernel's line and the caret under the column
            out.print(Text.assemble("    ", terminal(quote)), highlight=False, soft_wrap=True)
    elif evaluation.reason:
        out.print(hanging(terminal(evaluation.reason, "red", one_line=True), out.width), highlight=False,
                  soft_wrap=True)
    # Two tables, so figures never wrap at 80 columns: what each case computed, then how fast.
    # A tensor description folds at its commas when the inputs need room.
    cols = [Col("case", "right", wrap=False), Col("inputs", folds=","),
            *(Col(c, "right", wrap=False) for c in ("ok", "max abs", "rel L2", "bad"))]
    rows = []
    for c in evaluation.cases:
        s = c.stats
        rows.append([str(c.index), " ".join(compact_shape(i) for i in c.inputs), _verdict(c),
                     _g(max((x.max_abs_error for x in s), default=None)),
                     _g(max((x.rel_l2_error for x in s), default=None)),
                     str(sum(x.mismatches for x in s)) if s else "-"])
    out.print(fitted_table(cols, rows, out.width, box=box.SIMPLE_HEAD, pad_edge=False))
    for c in evaluation.cases:
        if c.unsupported or c.reference_error:
            out.print(Text.assemble(f"case {c.index} not judged: ", terminal(c.unsupported or c.reference_error)),
                      highlight=False)
    if any(c.speedup is not None for c in evaluation.cases):   # incorrect cases get no figures
        # The three times of each side (docs/evaluation.md), the kernel's row above the reference's.
        cols = [Col("case", "right", wrap=False), Col("of", wrap=False),
                *(Col(c, "right") for c in ("kernel µs", "device µs", "e2e µs", "speedup e2e", "speedup device"))]
        rows = []
        for c in evaluation.cases:
            rows.append([str(c.index), "kernel", *_times(c.times), _g(c.speedup, "x"), _g(c.device_speedup, "x")])
            rows.append(["", "torch_npu", *_times(c.reference_times), "", ""])
        out.print(fitted_table(cols, rows, out.width, box=box.SIMPLE_HEAD, pad_edge=False))
    first = evaluation.cases[0] if evaluation.cases else None
    if payload["pipes"] and first is not None and first.profile is not None and first.correct:
        p = first.profile
        timed = [c for c in evaluation.cases if c.roofline_fraction is not None]
        out.print(f"roofline fraction {roofline(evaluation.roofline_fraction, evaluation.roofline_bound)}: the mean "
                  f"over {len(timed)} timed case(s) of the reference's essential-work bound over the kernel's "
                  f"kernel time (kernel_us), launch excluded", highlight=False)
        out.print(f"profile of case {payload['case']}: {p.kernel_us:.2f} µs kernel, {p.device_us:.2f} µs device, "
                  f"{p.time_us:.2f} µs end to end ({p.launches} launch(es): {p.host_dispatch_us:.2f} µs host "
                  f"dispatch, {p.device_fixed_us:.2f} µs device fixed), {payload['cycles']} device cycles, "
                  f"bottleneck {payload['bottleneck']}, roofline "
                  f"fraction {roofline(first.roofline_fraction)} ({p.roofline_bound} bound: {p.roofline_bound_us:.2f} "
                  f"µs)", highlight=False)
        rows = [[name, str(stat["busy_cycles"]), f"{100 * stat['utilisation']:.1f}%"]
                for name, stat in payload["pipes"].items()]
        out.print(fitted_table([Col("pipe", wrap=False), Col("busy cycles", "right", wrap=False),
                                Col("utilisation", "right", wrap=False)], rows, out.width,
                               box=box.SIMPLE_HEAD, pad_edge=False))
    show_printed(out.console(), evaluation.cases, verbose)


@app.command("presets", help="List the hardware presets.")
def presets(as_json: bool = typer.Option(False, "--json", help="print a JSON list")) -> None:
    from sage.npu.hardware import list_presets, load_preset

    specs = [load_preset(name) for name in list_presets()]
    rows = [{"name": name, "description": s.description, "clock_mhz": s.chip.clock_mhz,
             "aic_cores": s.chip.aic_cores, "aiv_cores": s.chip.aiv_cores, "hbm_gbps": s.chip.hbm_gbps,
             "ub_kib": s.buffers.ub_bytes // 1024, "host_dispatch_us": s.launch.host_dispatch_us,
             "device_fixed_us": s.launch.device_fixed_us, "sync_us": s.launch.sync_us}
            for name, s in zip(list_presets(), specs)]
    if as_json:
        print(json.dumps(rows))
        return
    cols = [Col("name", wrap=False), *(Col(c, "right", wrap=False) for c in
                                       ("clock MHz", "AIC", "AIV", "HBM GB/s", "UB KiB", "dispatch µs",
                                        "device fixed µs", "sync µs")),
            Col("description", extra=True, min_width=30)]
    table_rows = [[r["name"], f"{r['clock_mhz']:g}", str(r["aic_cores"]), str(r["aiv_cores"]), f"{r['hbm_gbps']:g}",
                   str(r["ub_kib"]), f"{r['host_dispatch_us']:g}", f"{r['device_fixed_us']:g}", f"{r['sync_us']:g}",
                   r["description"]] for r in rows]
    table = fitted_table(cols, table_rows, out.width, title="hardware presets")
    out.print(table)
    if len(table.columns) < len(cols):   # too narrow for the column: the descriptions follow the table
        for r in rows:
            out.print(f"[bold]{r['name']}[/bold]: {escape(r['description'])}", highlight=False)


def excerpt(lines: list[str], width: int) -> list[str]:
    """A quoted source line and the caret line under it, cut to `width` around the caret so the
    caret keeps its column (never wrapped, which would part it from what it points at)."""
    if len(lines) != 2 or "^" not in lines[1]:
        return [line[:width] for line in lines]
    code, caret = lines
    at = caret.index("^")
    start = max(0, min(at - width // 2, len(code) - width))
    return [code[start:start + width].rstrip(), caret[start:start + width].rstrip()]


def _verdict(case: Any) -> str:
    if case.unsupported or case.reference_error:
        return markup("[yellow]skip[/yellow]")       # the line under the table says why
    if case.correct:
        return markup("[green]empty[/green]") if case.empty else markup("[green]yes[/green]")
    return markup("[red]no[/red]")


def _times(t: Any) -> list[str]:
    """kernel_us, device_us, end_to_end_us of a `Times`, or dashes."""
    return [_g(t.kernel_us), _g(t.device_us), _g(t.end_to_end_us)] if t is not None else ["-"] * 3


def _g(v: float | None, suffix: str = "") -> str:
    return "-" if v is None else f"{v:.3g}{suffix}"
