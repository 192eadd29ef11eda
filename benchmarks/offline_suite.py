"""The whole npukernelbench suite under every memory mode with the offline agent, and
docs/results.md written from what was measured.

    .venv/bin/python benchmarks/offline_suite.py --out runs/offline_suite
    .venv/bin/python benchmarks/offline_suite.py --out runs/offline_suite --resume         # after a stop
    .venv/bin/python benchmarks/offline_suite.py --out runs/offline_suite --results-only   # rewrite the doc

It takes the code path of `sage bench npukernelbench --compare` (sage.bench.ablation.run_compare:
the same seeded task order for every mode, each mode with its own memory in OUT/<mode>/memory.db,
the memory carried across epochs), with the agent pinned to the offline synthesizer so a
model configured in the user's settings cannot change what is measured.
"""

from __future__ import annotations

import argparse
import json
import platform
import shlex
import sys
import time
from datetime import datetime, timezone
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sage.bench.ablation import (COMPARE_FILE, MEMORY_MODES, ablation_level_metrics, ablation_metrics,  # noqa: E402
                                 load_mode_rows, run_compare, run_memory_url)
from sage.bench.metrics import SuiteMetrics  # noqa: E402
from sage.bench.runner import BenchConfig, ResultRow, final_rows  # noqa: E402


def offline_solver(mode: str, config: BenchConfig, *, iterations: int):  # noqa: ANN201 - an AgentSolver
    from sage.agent.bench_solver import AgentSolver

    return AgentSolver(model=None, memory_mode=mode, iterations=iterations, preset=config.preset,
                       cases=config.cases, memory_url=run_memory_url(config))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "runs" / "offline_suite")
    parser.add_argument("--modes", default=",".join(MEMORY_MODES))
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--cases", type=int, default=None, help="first K cases per task (default all)")
    parser.add_argument("--iterations", type=int, default=4, help="refinement turns per task")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--resume", action="store_true")
    parser.add_argument("--results", type=Path, default=ROOT / "docs" / "results.md")
    parser.add_argument("--results-only", action="store_true", help="only rewrite --results from --out")
    args = parser.parse_args()
    command = "python " + " ".join(shlex.quote(a) for a in [f"benchmarks/{Path(__file__).name}", *sys.argv[1:]])
    if not args.results_only:
        config = BenchConfig(target="npukernelbench", cases=args.cases, workers=args.workers, out=args.out,
                             resume=args.resume, epochs=args.epochs, seed=args.seed)
        began = time.perf_counter()

        def on_row(mode: str, row: ResultRow) -> None:
            print(f"[{time.perf_counter() - began:7.1f} s] {mode} epoch {row.epoch + 1} {row.task}: {row.status}",
                  flush=True)

        run = run_compare(config, args.modes.split(","), partial(offline_solver, iterations=args.iterations),
                          on_row=on_row)
        record = json.loads((args.out / COMPARE_FILE).read_text())
        record.update(command=command, iterations=args.iterations, workers=args.workers,
                      finished_at=datetime.now(timezone.utc).isoformat(timespec="minutes"))
        (args.out / COMPARE_FILE).write_text(json.dumps(record, indent=2) + "\n")
        print(f"all modes in {run.wall_s:.0f} s; report {run.report}")
    args.results.write_text(results_markdown(args.out), encoding="utf-8")
    print(f"wrote {args.results}")


def results_markdown(out: Path) -> str:
    record = json.loads((out / COMPARE_FILE).read_text())
    rows = load_mode_rows(out)
    metrics, levels = ablation_metrics(rows), ablation_level_metrics(rows)
    cases = record.get("cases")
    walls = record.get("wall_s", {})
    lines = [
        "# Measured results: the offline agent on npukernelbench, by memory mode", "",
        "Produced by `benchmarks/offline_suite.py` (the code path of "
        "`sage bench npukernelbench --compare`); the figures below are copied from its output by the "
        "script, as measured.", "",
        f"- command: `{record.get('command', '?')}`",
        f"- finished: {record.get('finished_at', '?')} UTC on {platform.machine()} "
        "(2 cores shared with other work)",
        f"- suite: npukernelbench, all levels; preset {record.get('preset')}; "
        f"cases: {'all' if cases is None else f'first {cases} per task'}; "
        f"refinement turns: {record.get('iterations', '?')}; epochs: {record.get('epochs')}; "
        f"seed: {record.get('seed')}; worker processes: {record.get('workers', '?')}",
        f"- wall time: {sum(walls.values()) / 60:.1f} min in all ("
        + ", ".join(f"{m} {walls[m] / 60:.1f} min" for m in metrics if m in walls) + ")",
        "- the same through the CLI (no model configured): `sage bench npukernelbench --compare --epochs "
        f"{record.get('epochs')} --seed {record.get('seed')} --iterations {record.get('iterations', '?')}"
        + ("" if cases is None else f" --cases {cases}") + f" --workers {record.get('workers', '?')} --out DIR`",
        f"- rows: `runs/{out.name}/<mode>/results.jsonl` (not committed); ablation report and learning "
        f"curve: `runs/{out.name}/report.md`, `runs/{out.name}/learning_curve.png`",
        f"- tasks run in one seeded order, the same in every mode and epoch; with {record.get('workers', '?')} "
        "worker processes an episode can start before the one ahead of it has stored what it learned",
        "", "## Suite, per memory mode and epoch", "",
        "Over the counted tasks (n); fast_1 is the share of all counted tasks that are correct and "
        "faster than the reference; speedup is the geometric mean over the correct tasks; roofline "
        "is the mean fraction of the roofline bound of the correct tasks.", "",
        *_table(("mode", "epoch"), [((m, str(e + 1)), s) for m, ep in metrics.items() for e, s in ep.items()]),
        "", "## Per level", "",
        *_table(("mode", "epoch", "level"), [((m, str(e + 1), lv), s) for m, ep in levels.items()
                                              for e, lvs in ep.items() for lv, s in lvs.items()]),
        "", "## Tasks whose result depends on the memory mode", "",
        "Speedup of the final kernel per mode and epoch (`wrong`: it ran but was not correct); tasks that "
        "came out the same in every mode and epoch are left out.", "",
        *_differing_tasks(rows, list(metrics)),
        "", "## What the figures say", "", *_observations(rows, metrics), "",
    ]
    return "\n".join(lines)


def _differing_tasks(rows: list[ResultRow], modes: list[str]) -> list[str]:
    epochs = sorted({r.epoch for r in rows})
    cells: dict[str, dict[tuple[str, int], str]] = {}
    for mode in modes:
        mode_rows = [r for r in rows if r.extra.get("ablation_mode") == mode]
        for e in epochs:
            for r in final_rows(mode_rows, e):
                ev = r.evaluation
                cell = "-" if ev is None or not ev.executed else (_x(ev.speedup) if ev.correct else "wrong")
                cells.setdefault(r.task, {})[(mode, e)] = cell
    keys = [(m, e) for m in modes for e in epochs]
    lines = ["| task | " + " | ".join(f"{m} {e + 1}" for m, e in keys) + " |", "|" + "---|" * (len(keys) + 1)]
    for task in sorted(cells):
        values = [cells[task].get(k, "-") for k in keys]
        if len(set(values)) > 1:
            lines.append(f"| {task} | " + " | ".join(values) + " |")
    return lines if len(lines) > 2 else ["(none: every task came out the same in every mode and epoch)"]


def _observations(rows: list[ResultRow], metrics: dict[str, dict[int, SuiteMetrics]]) -> list[str]:
    """Plain statements computed from the rows: what the offline agent could not attempt,
    and how each mode's last epoch compares with `none`."""
    notes = []
    mode, epochs = next(iter(metrics.items()))
    last = max(epochs)
    finals = [r for r in final_rows([r for r in rows if r.extra.get("ablation_mode") == mode], last)]
    no_kernel = sum(r.status == "no_kernel" for r in finals)
    notes.append(f"- The offline synthesizer has no template for {no_kernel} of {len(finals)} tasks "
                 f"(status no_kernel in {mode}, epoch {last + 1}; the reasons are in each mode's report.md); "
                 f"those count as failures in every mode, which bounds the correctness rate.")
    base = metrics.get("none", {}).get(last)
    for m, ep in metrics.items():
        s = ep.get(last)
        if s is None or m == "none" or base is None:
            continue
        delta = "-" if s.geomean_speedup is None or base.geomean_speedup is None else \
            f"{s.geomean_speedup / base.geomean_speedup:.3f}x of none's"
        notes.append(f"- {m}, epoch {last + 1}: {s.correct} correct of {s.tasks} (none: {base.correct}); "
                     f"geomean speedup {_x(s.geomean_speedup)} ({delta}); fast_1 {_pct(s.fast_1)} "
                     f"(none: {_pct(base.fast_1)}).")
    for m, ep in metrics.items():
        if len(ep) > 1:
            first, final = ep[min(ep)], ep[max(ep)]
            notes.append(f"- {m}: geomean speedup epoch 1 {_x(first.geomean_speedup)} -> epoch {max(ep) + 1} "
                         f"{_x(final.geomean_speedup)}; correct {first.correct} -> {final.correct}.")
    return notes


def _table(keys: tuple[str, ...], items: list[tuple[tuple[str, ...], SuiteMetrics]]) -> list[str]:
    cols = [*keys, "n", "executed", "correct", "fast_1", "fast_1 of solved", "geomean speedup", "roofline"]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for key, m in items:
        lines.append("| " + " | ".join([*key, str(m.tasks), _pct(m.execution_rate), _pct(m.correctness_rate),
                                        _pct(m.fast_1), _pct(m.fast_1_solved), _x(m.geomean_speedup),
                                        _pct(m.mean_roofline_fraction)]) + " |")
    return lines


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{100 * v:.1f}%"


def _x(v: float | None) -> str:
    return "-" if v is None else f"{v:.3f}x"


if __name__ == "__main__":
    main()
