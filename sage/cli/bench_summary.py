"""What `sage bench` prints when a run ends: the rates and speedups per level, the tasks that
are not correct counted by the kind of reason, and where the results are.

Headings are lines of their own, wrapped at the terminal's width (a table's title is
wrapped at the table's, which broke "rates over counted / tasks" over a narrow table).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rich import box

from sage import __version__
from sage.bench.roofline import roofline_text as roofline
from sage.cli.render import Col, Screen, fitted_table

out = Screen()


def print_summary(summary: dict, result: Any, report: Path, reference_only: bool) -> None:
    from sage.bench.runner import NOT_JUDGED

    if reference_only:
        rows = [r for r in result.rows if r.final and r.mode == "reference"]
        ok = sum(r.status == "reference_ok" for r in rows)
        out.text(f"reference measured for {ok} of {len(rows)} tasks in {result.wall_s:.1f} s")
    else:
        # Two tables, so every header stays whole at 80 columns: how many tasks, then how fast.
        levels = [("all", summary["suite"]), *summary["levels"].items()]
        out.text(f"{result_target(result)}: rates over the counted tasks")
        cols = [Col(""), *(Col(c, "right", wrap=False) for c in ("tasks", "exec", "correct", "fast_1", "fast_1.1",
                                                                  "skip"))]
        rows = [[name, str(m["tasks"]), pct(m["execution_rate"]), pct(m["correctness_rate"]), pct(m["fast_1"]),
                 pct(m.get("fast_1_1")), str(m["skipped"])] for name, m in levels]
        out.print(fitted_table(cols, rows, out.width, box=box.SIMPLE_HEAD))
        out.text("speedups over the torch_npu reference (a task not correct counts 1x in 'all')")
        cols = [Col(""), *(Col(c, "right") for c in ("e2e geomean solved", "e2e geomean all",
                                                      "device geomean solved", "roofline fraction"))]
        rows = [[name, x(m["geomean_speedup"]), x(m.get("geomean_speedup_all")),
                 x(m.get("device_geomean_speedup")), roofline(m["mean_roofline_fraction"])] for name, m in levels]
        out.print(fitted_table(cols, rows, out.width, box=box.SIMPLE_HEAD))
        _print_times(summary.get("times_solved") or {})
    _print_reasons(summary.get("by_reason") or [], report)
    unjudged = [r for r in result.rows if r.status == NOT_JUDGED and not any(
        o.final and (o.task, o.epoch) == (r.task, r.epoch) for o in result.rows)]
    if unjudged:
        out.text(f"{len(unjudged)} task(s) not judged ({unjudged[-1].extra.get('error', '?')}); "
                 f"`--resume --out {result.out}` runs them")
    resumed = f", {result.resumed} resumed" if result.resumed else ""
    out.text(f"{result.ran} tasks run{resumed} on {result_preset(result)} (sage {__version__}, seed "
             f"{result_seed(result)}); results in {result.out}/results.jsonl; report {report}")


def _print_times(solved: dict) -> None:
    """The three times (docs/evaluation.md) over the correct tasks, the kernels' and torch_npu's."""
    if not solved.get("tasks") or not solved.get("kernel") or not solved.get("torch_npu"):
        return
    out.text(f"times over the {solved['tasks']} correct task(s), geometric means of each task's")
    kinds = ("kernel_us", "device_us", "end_to_end_us")
    rows = [[side, *(f"{solved[key][k]:.3g}" for k in kinds)] for side, key in (("kernels", "kernel"),
                                                                                  ("torch_npu", "torch_npu"))]
    cols = [Col(""), *(Col(c, "right", wrap=False) for c in ("kernel µs", "device µs", "e2e µs"))]
    out.print(fitted_table(cols, rows, out.width, box=box.SIMPLE_HEAD))


def _print_reasons(groups: list[dict], report: Path) -> None:
    """The tasks that are not correct, counted by the kind of reason (each task's own reason is
    in report.md and in --json's `not_correct`)."""
    if not groups:
        return
    out.text(f"not correct, by reason ({sum(g['count'] for g in groups)} tasks; each one's reason in {report})")
    rows = [[g["reason"], str(g["count"])] for g in groups]
    out.print(fitted_table([Col("reason"), Col("tasks", "right", wrap=False)], rows, out.width, box=box.SIMPLE_HEAD))


def _run_config(result: Any) -> dict:
    return json.loads((result.out / "run.json").read_text())


def result_target(result: Any) -> str:
    return _run_config(result)["target"]


def result_preset(result: Any) -> str:
    return _run_config(result)["preset"]


def result_seed(result: Any) -> int:
    return _run_config(result)["seed"]


def pct(v: float | None) -> str:
    return "-" if v is None else f"{100 * v:.1f}%"


def x(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}x"

