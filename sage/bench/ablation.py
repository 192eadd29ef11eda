"""The memory ablation: the same tasks in the same order, once per memory mode.

`run_compare` runs one BenchConfig per memory mode into `<out>/<mode>/`, one mode after the
other, each with the solver `solver_for(mode, config)` gives (the CLI's: the agent with its
own memory database in that folder). `write_ablation_report(out)` rebuilds `<out>/report.md`
from the mode folders alone: a table per mode and epoch, the same split by level, and a
learning curve (correctness and speedup per epoch, one line per mode).

Metrics are those of sage.bench.metrics over the final row of each task in one epoch;
epochs are shown numbered from 1 (rows store them from 0).

Within a mode, tasks run on the run's worker processes (`--workers`); with W workers an
episode may start before the W - 1 episodes ahead of it have written what they learned.
`--workers 1` makes each mode strictly sequential (and exactly repeatable).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from pydantic import BaseModel

from sage.bench.metrics import SuiteMetrics, compute_metrics, metrics_by_level
from sage.bench.report import REPORT_FILE, NoResults, ReportSection, write_report
from sage.bench.runner import (CONFIG_FILE, RESULTS_FILE, BenchConfig, BenchRun, ResultRow, Solver, final_rows,
                               read_rows, run_bench)

MEMORY_MODES = ("none", "uniform", "atu", "sage")
COMPARE_FILE = "compare.json"
MEMORY_DB = "memory.db"
LEARNING_CURVE_FILE = "learning_curve.png"
# Rows read from a mode folder carry their mode here: the folder, not the solver, says
# which arm of the ablation a row belongs to.
MODE_KEY = "ablation_mode"

SolverFactory = Callable[[str, BenchConfig], Solver]


class CompareRun(BaseModel):
    out: Path
    modes: list[str]
    runs: dict[str, BenchRun]
    report: Path
    wall_s: float


def run_compare(config: BenchConfig, modes: Sequence[str], solver_for: SolverFactory,
                on_start: Callable[[str, int], None] | None = None,
                on_row: Callable[[str, ResultRow], None] | None = None) -> CompareRun:
    """Runs `config` under each mode into `<config.out>/<mode>/` and writes the ablation
    report. With `config.resume`, each mode folder that has results resumes, the others start."""
    began = time.perf_counter()
    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    record = _read_compare(out)
    runs: dict[str, BenchRun] = {}
    for mode in modes:
        mode_out = out / mode
        resume = config.resume and (mode_out / RESULTS_FILE).exists()
        mode_config = config.model_copy(update={"out": mode_out, "resume": resume})
        run = run_bench(mode_config, solver_for(mode, mode_config),
                        on_start=(lambda total, m=mode: on_start(m, total)) if on_start else None,
                        on_row=(lambda row, m=mode: on_row(m, row)) if on_row else None)
        write_report(mode_out)
        runs[mode] = run
        # A resumed mode's wall time adds to what its earlier runs took.
        walls = record.setdefault("wall_s", {})
        walls[mode] = round((walls.get(mode, 0.0) if resume else 0.0) + run.wall_s, 1)
        record["modes"] = _ordered([*record.get("modes", []), mode])
        record.update(target=config.target, epochs=config.epochs, seed=config.seed, cases=config.cases,
                      preset=config.preset)
        (out / COMPARE_FILE).write_text(json.dumps(record, indent=2) + "\n")
    report = write_ablation_report(out)
    return CompareRun(out=out, modes=list(modes), runs=runs, report=report,
                      wall_s=round(time.perf_counter() - began, 3))


def run_memory_url(config: BenchConfig) -> str:
    """The SQLite URL of a run's own memory, `<out>/memory.db`. A run that does not resume
    starts it empty, as it starts results.jsonl empty: a reused folder must not hand the
    new run what an earlier one learned."""
    db = (Path(config.out) / MEMORY_DB).resolve()
    if not config.resume:
        for path in (db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")):
            path.unlink(missing_ok=True)
    return f"sqlite:///{db}"


def mode_dirs(out: Path) -> dict[str, Path]:
    """The mode folders of a compare run (subfolders with a results.jsonl), in the order
    none, uniform, atu, sage, then any others by name."""
    out = Path(out)
    found = [p.name for p in sorted(out.iterdir()) if p.is_dir() and (p / RESULTS_FILE).exists()] \
        if out.is_dir() else []
    return {m: out / m for m in _ordered(found)}


def load_mode_rows(out: Path) -> list[ResultRow]:
    """Every row of every mode folder, each tagged with its mode in `extra[MODE_KEY]`."""
    rows = []
    for mode, path in mode_dirs(out).items():
        rows += [r.model_copy(update={"extra": {**r.extra, MODE_KEY: mode}}) for r in read_rows(path / RESULTS_FILE)]
    return rows


def ablation_metrics(rows: list[ResultRow]) -> dict[str, dict[int, SuiteMetrics]]:
    """mode -> epoch -> suite metrics of that epoch's final kernel rows."""
    return {mode: {e: compute_metrics(r.evaluation for r in finals) for e, finals in epochs.items()}
            for mode, epochs in finals_by_mode_epoch(rows).items()}


def ablation_level_metrics(rows: list[ResultRow]) -> dict[str, dict[int, dict[str, SuiteMetrics]]]:
    """mode -> epoch -> level ("level0".., "other") -> metrics."""
    return {mode: {e: metrics_by_level(r.evaluation for r in finals) for e, finals in epochs.items()}
            for mode, epochs in finals_by_mode_epoch(rows).items()}


class AblationTableSection:
    def render(self, rows: list[ResultRow], out: Path) -> str | None:
        metrics = ablation_metrics(rows)
        if not metrics:
            return None
        lines = ["## Memory ablation", "",
                 "Per memory mode and epoch, over the counted tasks (fast_1: correct and faster than the "
                 "reference, share of all counted tasks; speedup: geometric mean over the correct tasks; "
                 "roofline: mean fraction of the roofline bound of the correct tasks).", "",
                 *_table_head("mode", "epoch")]
        for mode, epochs in metrics.items():
            lines += [_table_row(m, mode, str(e + 1)) for e, m in epochs.items()]
        return "\n".join(lines)


class LevelAblationSection:
    def render(self, rows: list[ResultRow], out: Path) -> str | None:
        metrics = ablation_level_metrics(rows)
        if not metrics:
            return None
        lines = ["## Memory ablation by level", "", *_table_head("mode", "epoch", "level")]
        for mode, epochs in metrics.items():
            for e, levels in epochs.items():
                lines += [_table_row(m, mode, str(e + 1), level) for level, m in levels.items()]
        return "\n".join(lines)


class LearningCurveSection:
    """learning_curve.png (sage.bench.plots): correctness rate and geometric-mean speedup of the
    solved tasks per epoch, one line and 95 % band per mode."""

    def render(self, rows: list[ResultRow], out: Path) -> str | None:
        from sage.bench.plots import learning_curve

        finals = {mode: {e: [r.evaluation for r in rs] for e, rs in epochs.items()}
                  for mode, epochs in finals_by_mode_epoch(rows).items()}
        plot = learning_curve(finals, Path(out))
        return "\n".join(["## Learning curve", "", plot.markdown()]) if plot is not None else None


def ablation_sections() -> list[ReportSection]:
    from sage.bench.ablation_stats import IntervalSection

    return [AblationTableSection(), IntervalSection(), LevelAblationSection(), LearningCurveSection()]


def write_ablation_report(out: Path, sections: Sequence[ReportSection] = ()) -> Path:
    """<out>/report.md of a compare run, from its mode folders alone."""
    out = Path(out)
    rows = load_mode_rows(out)
    if not rows:
        raise NoResults(f"{out}: no mode folder with results (none of {', '.join(MEMORY_MODES)} has "
                        f"{RESULTS_FILE})")
    parts = [_header(out)]
    for section in [*ablation_sections(), *sections]:
        text = section.render(rows, out)
        if text:
            parts.append(text.rstrip() + "\n")
    path = out / REPORT_FILE
    path.write_text("\n".join(parts), encoding="utf-8")
    return path


def finals_by_mode_epoch(rows: list[ResultRow]) -> dict[str, dict[int, list[ResultRow]]]:
    by_mode: dict[str, list[ResultRow]] = {}
    for r in rows:
        by_mode.setdefault(r.extra.get(MODE_KEY, "?"), []).append(r)
    grouped: dict[str, dict[int, list[ResultRow]]] = {}
    for mode in _ordered(list(by_mode)):
        mode_rows = by_mode[mode]
        epochs = sorted({r.epoch for r in mode_rows})
        finals = {e: [r for r in final_rows(mode_rows, e) if r.mode == "kernel" and r.evaluation is not None]
                  for e in epochs}
        if any(finals.values()):
            grouped[mode] = {e: f for e, f in finals.items() if f}
    return grouped


def _ordered(modes: list[str]) -> list[str]:
    unique = list(dict.fromkeys(modes))
    return [m for m in MEMORY_MODES if m in unique] + sorted(m for m in unique if m not in MEMORY_MODES)


def _read_compare(out: Path) -> dict:
    path = out / COMPARE_FILE
    return json.loads(path.read_text()) if path.exists() else {}


def _header(out: Path) -> str:
    record = _read_compare(out)
    dirs = mode_dirs(out)
    config = {}
    first = next(iter(dirs.values()), None)
    if first is not None and (first / CONFIG_FILE).exists():
        config = json.loads((first / CONFIG_FILE).read_text())
    cases = config.get("cases")
    walls = record.get("wall_s", {})
    lines = [f"# Memory ablation: {config.get('target', out.name)}", "",
             f"- modes: {', '.join(dirs)} (each in its own folder with its own memory and report)",
             f"- preset: {config.get('preset', '?')}; epochs: {config.get('epochs', '?')}; "
             f"seed: {config.get('seed', '?')}; cases: {'all' if cases is None else f'first {cases}'}; "
             f"sage {config.get('sage_version', '?')}"]
    if walls:
        lines.append("- wall time: " + ", ".join(f"{m} {walls[m]:.0f} s" for m in dirs if m in walls))
    return "\n".join(lines) + "\n"


def _table_head(*keys: str) -> list[str]:
    cols = [*keys, "tasks", "executed", "correct", "fast_1", "geomean speedup", "roofline"]
    return ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]


def _table_row(m: SuiteMetrics, *keys: str) -> str:
    cells = [*keys, str(m.tasks), _pct(m.execution_rate), _pct(m.correctness_rate), _pct(m.fast_1),
             "-" if m.geomean_speedup is None else f"{m.geomean_speedup:.3f}x", _pct(m.mean_roofline_fraction)]
    return "| " + " | ".join(cells) + " |"


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{100 * v:.1f}%"


__all__ = ["COMPARE_FILE", "LEARNING_CURVE_FILE", "MEMORY_MODES", "MODE_KEY", "AblationTableSection",
           "CompareRun", "LearningCurveSection", "LevelAblationSection", "ablation_level_metrics",
           "ablation_metrics", "ablation_sections", "load_mode_rows", "mode_dirs", "run_compare", "run_memory_url",
           "write_ablation_report"]
