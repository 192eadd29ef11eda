"""report.md and its plots, rebuilt from results.jsonl alone (`sage bench report DIR`).

Sections are pluggable: a `ReportSection` renders Markdown from the rows and may write
its own plots into the run folder. The built-in ones cover one run; the agent work adds
sections for ablation tables and learning curves across epochs by passing them to
`write_report(..., sections=...)`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from sage.bench.evaluate import geomean_times
from sage.bench.metrics import SuiteMetrics, compute_metrics, metrics_by_level
from sage.bench.reasons import by_reason, not_correct, row_reason
from sage.bench.roofline import roofline_text
from sage.bench.runner import CONFIG_FILE, RESULTS_FILE, ResultRow, final_rows, read_rows
from sage.npu.timeline import Times
from sage.text import md_cell

SUMMARY_FILE = "summary.json"

REPORT_FILE = "report.md"


class ReportSection(Protocol):
    def render(self, rows: list[ResultRow], out: Path) -> str | None:
        """Markdown for this section (None: nothing to say for these rows)."""
        ...


class NoResults(FileNotFoundError):
    """The folder has no results.jsonl (or it is empty)."""


def write_report(out: Path, sections: Sequence[ReportSection] = ()) -> Path:
    out = Path(out)
    rows = read_rows(out / RESULTS_FILE)
    if not rows:
        raise NoResults(f"{out / RESULTS_FILE}: no results to report")
    write_summary(out, rows)
    parts = [_header(out, rows)]
    for section in [*default_sections(), *sections]:
        text = section.render(rows, out)
        if text:
            parts.append(text.rstrip() + "\n")
    path = out / REPORT_FILE
    path.write_text("\n".join(parts), encoding="utf-8")
    return path


def write_summary(out: Path, rows: list[ResultRow]) -> dict:
    """summary.json: the suite and per-level metrics of the last epoch."""
    finals = [r for r in final_rows(rows) if r.evaluation is not None]
    missed = not_correct(final_rows(rows))
    summary = {
        "tasks": len(final_rows(rows)),
        "suite": compute_metrics(r.evaluation for r in finals).model_dump(),
        "levels": {k: m.model_dump() for k, m in metrics_by_level(r.evaluation for r in finals).items()},
        # every final row that is not correct, with its one-line reason, and the counts per kind
        "not_correct": [m.model_dump() for m in missed],
        "by_reason": [{"reason": g.kind, "count": g.count} for g in by_reason(missed)],
        # per task, the kernel's and torch_npu's three times (geometric means over the cases)
        "times_solved": _solved_times([r.evaluation for r in finals if r.mode == "kernel"]),
        "times": {r.task: {"kernel": _dump(r.evaluation.times), "torch_npu": _dump(r.evaluation.reference_times)}
                  for r in finals if r.mode == "kernel"},
    }
    Path(out, SUMMARY_FILE).write_text(json.dumps(summary, indent=2) + "\n")
    return summary


def _solved_times(evaluations: list) -> dict:
    """The three times over the correct tasks (geometric means of the tasks' own), both sides:
    what the terminal summary of `sage bench` shows."""
    solved = [e for e in evaluations if e.correct and e.times is not None and e.reference_times is not None]
    return {"tasks": len(solved), "kernel": _dump(geomean_times([e.times for e in solved])),
            "torch_npu": _dump(geomean_times([e.reference_times for e in solved]))}


def _dump(t: Times | None) -> dict | None:
    return t.model_dump() if t is not None else None


def default_sections() -> list[ReportSection]:
    return [MetricsSection(), ReasonsSection(), PlotsSection(), TaskTableSection(), ReferenceSection(), SkippedSection()]


class MetricsSection:
    def render(self, rows: list[ResultRow], out: Path) -> str | None:
        finals = _kernel_finals(rows)
        if not finals:
            return None
        lines = ["## Suite", "", *metrics_table({"all": compute_metrics(r.evaluation for r in finals)}), "",
                 "## By level", "", *metrics_table(metrics_by_level(r.evaluation for r in finals))]
        return "\n".join(lines)


class TaskTableSection:
    def render(self, rows: list[ResultRow], out: Path) -> str | None:
        finals = sorted(_kernel_finals(rows), key=lambda r: (r.level if r.level is not None else -1, r.task))
        if not finals:
            return None
        lines = ["## Tasks", "", "Speedups and times per task are geometric means over its cases; end to end is the "
                 "scored one. Times are kernel / device / end to end µs (docs/evaluation.md, \"Three times\").", "",
                 "| task | status | cases ok | speedup end-to-end | speedup device | kernel µs | torch_npu µs "
                 "| roofline fraction | bottleneck | note |",
                 "|---|---|---|---|---|---|---|---|---|---|"]
        for r in finals:
            e = r.evaluation
            ok = f"{sum(c.correct for c in e.cases)}/{len(e.cases)}" if e.cases else "-"
            bottleneck = next((c.bottleneck for c in e.cases if c.bottleneck), None)
            note = row_reason(r) or ""
            lines.append(f"| {md_cell(r.task)} | {e.status} | {ok} | {_num(e.speedup, 'x')} | {_num(e.device_speedup, 'x')} "
                         f"| {times_text(e.times)} | {times_text(e.reference_times)} "
                         f"| {roofline_text(e.roofline_fraction, e.roofline_bound)} | {bottleneck or '-'} | {md_cell(note)} |")
        return "\n".join(lines)


class ReferenceSection:
    """Runs without a solver measure the reference model: its time per task and case."""

    def render(self, rows: list[ResultRow], out: Path) -> str | None:
        refs = sorted((r for r in final_rows(rows) if r.mode == "reference" and r.reference),
                      key=lambda r: (r.level if r.level is not None else -1, r.task))
        if not refs:
            return None
        ok = [r for r in refs if r.status == "reference_ok"]
        timed = [r for r in ok if r.reference.total_us is not None]
        lines = ["## Reference model", "",
                 f"The reference ran on a CPU for {len(ok)} of {len(refs)} tasks; {len(timed)} have a reference "
                 f"time. Wall time of the measurements: {sum(r.wall_s for r in refs):.1f} s (summed over workers).",
                 "",
                 "| task | cases | end-to-end µs per case | device µs per case | kernel µs per case | wall s |",
                 "|---|---|---|---|---|---|"]
        for r in ok:
            per_case = ", ".join(_num(c.total_us) for c in r.reference.cases)
            device = ", ".join(_num(c.device_us) for c in r.reference.cases)
            kernel = ", ".join(_num(c.kernel_us) for c in r.reference.cases)
            lines.append(f"| {md_cell(r.task)} | {len(r.reference.cases)} | {per_case} | {device} | {kernel} "
                         f"| {r.wall_s:.2f} |")
        return "\n".join(lines)


class SkippedSection:
    """Tasks that leave the metrics (and reference measurements that failed), each with why."""

    def render(self, rows: list[ResultRow], out: Path) -> str | None:
        skipped = [r for r in final_rows(rows) if r.status in ("reference_unavailable", "reference_error", "unsupported")
                   or (r.mode == "reference" and r.status != "reference_ok")]
        if not skipped:
            return None
        lines = ["## Skipped (not counted)", "", "| task | why |", "|---|---|"]
        for r in sorted(skipped, key=lambda r: r.task):
            lines.append(f"| {md_cell(r.task)} | {r.status}: {md_cell(row_reason(r) or '')} |")
        return "\n".join(lines)


class ReasonsSection:
    """Every task that is not correct, grouped by the kind of its reason (the terminal summary's
    groups); each task's own reason is in the tables above."""

    def render(self, rows: list[ResultRow], out: Path) -> str | None:
        groups = by_reason(not_correct(final_rows(rows)))
        if not groups:
            return None
        lines = ["## Not correct, by reason", "", "| reason | tasks | which |", "|---|---|---|"]
        for g in groups:
            lines.append(f"| {md_cell(g.kind)} | {g.count} | {md_cell(', '.join(g.tasks), 2000)} |")
        return "\n".join(lines)


class PlotsSection:
    """The plots of sage.bench.plots: speedup distribution, roofline fraction against reference
    time and, over several epochs, the learning curve; each caption counts what is not drawn."""

    def render(self, rows: list[ResultRow], out: Path) -> str | None:
        from sage.bench import plots

        finals = [r.evaluation for r in _kernel_finals(rows)]
        if not finals:
            return None
        by_epoch = {e: [r.evaluation for r in final_rows(rows, e) if r.mode == "kernel" and r.evaluation is not None]
                    for e in sorted({r.epoch for r in rows})}
        mode = next((str(r.extra["memory_mode"]) for r in rows if r.extra.get("memory_mode")), "this run")
        made = [p for p in (plots.speedup_distribution(finals, out), plots.roofline_vs_reference(finals, out),
                            plots.learning_curve({mode: by_epoch}, out)) if p is not None]
        body = [p.markdown() for p in made] or [f"No plot: {plots.not_drawn(finals)}."]
        return "\n\n".join(["## Plots", *body])


def metrics_table(metrics: dict[str, SuiteMetrics]) -> list[str]:
    """End to end (the headline) first, then the same on device time alone."""
    lines = ["| | tasks | executed | correct | fast_1 e2e | fast_1.1 e2e | geomean e2e (solved) | geomean e2e (all, "
             "fail = 1x) | fast_1 device | fast_1.1 device | geomean device (solved) | geomean device (all) | roofline fraction "
             "| skipped |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, m in metrics.items():
        lines.append(f"| {name} | {m.tasks} | {_pct(m.execution_rate)} | {_pct(m.correctness_rate)} "
                     f"| {_pct(m.fast_1)} | {_pct(m.fast_1_1)} | {_num(m.geomean_speedup, 'x')} "
                     f"| {_num(m.geomean_speedup_all, 'x')} | {_pct(m.device_fast_1)} | {_pct(m.device_fast_1_1)} "
                     f"| {_num(m.device_geomean_speedup, 'x')} | {_num(m.device_geomean_speedup_all, 'x')} "
                     f"| {roofline_text(m.mean_roofline_fraction)} | {m.skipped} |")
    return lines


def _header(out: Path, rows: list[ResultRow]) -> str:
    config = {}
    if (out / CONFIG_FILE).exists():
        config = json.loads((out / CONFIG_FILE).read_text())
    solvers = sorted({r.solver for r in rows if r.solver})
    epochs = sorted({r.epoch for r in rows})
    lines = [f"# Benchmark report: {md_cell(config.get('target', out.name), 300)}", "",
             f"- results: `{RESULTS_FILE}` ({len(rows)} rows, {len(final_rows(rows))} tasks in the last epoch)",
             f"- preset: {config.get('preset', '?')}; solver: {', '.join(solvers) or '-'}; "
             f"epochs: {len(epochs)}; seed: {config.get('seed', '?')}; sage {config.get('sage_version', '?')}"]
    return "\n".join(lines) + "\n"


def _kernel_finals(rows: list[ResultRow]) -> list[ResultRow]:
    return [r for r in final_rows(rows) if r.mode == "kernel" and r.evaluation is not None]


def times_text(t: Times | None) -> str:
    """kernel / device / end-to-end µs of a `Times`."""
    return "-" if t is None else f"{_num(t.kernel_us)} / {_num(t.device_us)} / {_num(t.end_to_end_us)}"


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{100 * v:.1f}%"


def _num(v: float | None, suffix: str = "") -> str:
    return "-" if v is None else f"{v:.3g}{suffix}"
