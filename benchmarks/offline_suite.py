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
import shutil
import sys
import time
from datetime import datetime, timezone
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sage.bench.ablation import (COMPARE_FILE, MEMORY_MODES, ablation_level_metrics, ablation_metrics,  # noqa: E402
                                 load_mode_rows, run_compare, run_memory_url)
from benchmarks.ablation_seeds import SEEDS_BEGIN  # noqa: E402
from benchmarks.credit_assignment import CREDIT_BEGIN  # noqa: E402
from benchmarks.public_folders import BEGIN as PUBLIC_BEGIN  # noqa: E402
from benchmarks.search_headroom import BEGIN as HEADROOM_BEGIN  # noqa: E402
from benchmarks.compiler_coverage import COMPILER_BEGIN, checkout_commit, classify  # noqa: E402
from benchmarks.suite_summary import pct as _pct, readme_summary, rerunnable, write_block, x as _x  # noqa: E402
from sage.bench.ablation_stats import IntervalSection  # noqa: E402
from sage.bench.metrics import SuiteMetrics  # noqa: E402
from sage.bench.runner import BenchConfig, ResultRow, final_rows  # noqa: E402


def offline_solver(mode: str, config: BenchConfig, *, iterations: int, search_budget: int):  # noqa: ANN201 - an AgentSolver
    from sage.agent.bench_solver import AgentSolver

    return AgentSolver(model=None, memory_mode=mode, iterations=iterations, search_budget=search_budget,
                       preset=config.preset, cases=config.cases, memory_url=run_memory_url(config))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "runs" / "offline_suite")
    parser.add_argument("--modes", default=",".join(MEMORY_MODES))
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--cases", type=int, default=None, help="first K cases per task (default all)")
    parser.add_argument("--iterations", type=int, default=1,
                        help="refinement turns per task (default 1: the offline agent's default, 2 attempts)")
    parser.add_argument("--search-budget", type=int, default=4,
                        help="simulator runs of the offline agent's schedule search per task (default 4: the agent's "
                             "default; a large budget with many --iterations measures what any start could still gain)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--ops", default=None,
                        help="comma-separated tasks (e.g. level2/15_attention_softmax_with_softcapping_and_dropout): "
                             "a partial run, which leaves --results and --readme as they are")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--resume", action="store_true")
    parser.add_argument("--results", type=Path, default=ROOT / "docs" / "results.md")
    parser.add_argument("--results-only", action="store_true", help="only rewrite --results from --out")
    parser.add_argument("--readme", type=Path, default=ROOT / "README.md",
                        help="whose offline-suite block (between its markers) gets the summary")
    parser.add_argument("--expert-run", type=Path, default=ROOT / "runs" / "expert_kernels",
                        help="a run of the expert library kernels as candidates (benchmarks/suite_eval.py --out); "
                             "its metrics go into --results when the folder exists")
    args = parser.parse_args()
    command = rerunnable("python " + " ".join(shlex.quote(a) for a in [f"benchmarks/{Path(__file__).name}",
                                                                         *sys.argv[1:]]), ROOT)
    if not args.results_only:
        config = BenchConfig(target="npukernelbench", cases=args.cases, workers=args.workers, out=args.out,
                             resume=args.resume, epochs=args.epochs, seed=args.seed,
                             ops=args.ops.split(",") if args.ops else None)
        began, commit = time.perf_counter(), checkout_commit()     # what is measured: the tree at the start

        def on_row(mode: str, row: ResultRow) -> None:
            print(f"[{time.perf_counter() - began:7.1f} s] {mode} epoch {row.epoch + 1} {row.task}: {row.status}",
                  flush=True)

        run = run_compare(config, args.modes.split(","), partial(offline_solver, iterations=args.iterations,
                                                                    search_budget=args.search_budget),
                          on_row=on_row)
        record = json.loads((args.out / COMPARE_FILE).read_text())
        record.update(command=command, iterations=args.iterations, search_budget=args.search_budget,
                      workers=args.workers, commit=commit,
                      finished_at=datetime.now(timezone.utc).isoformat(timespec="minutes"))
        (args.out / COMPARE_FILE).write_text(json.dumps(record, indent=2) + "\n")
        print(f"all modes in {run.wall_s:.0f} s; report {run.report}")
    if args.ops:
        return                          # a few tasks are no suite result: the docs keep the full run's
    kept = kept_blocks(args.results.read_text(encoding="utf-8")) if args.results.exists() else ""
    curve = args.out / "learning_curve.png"
    image = None
    if curve.exists():          # the doc is committed, the run folder is not: the plot goes beside the doc
        image = Path("img") / f"{args.out.name}_learning_curve.png"
        (args.results.parent / image).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(curve, args.results.parent / image)
    args.results.write_text(results_markdown(args.out, args.expert_run, image) + kept, encoding="utf-8")
    print(f"wrote {args.results}")
    if args.readme.exists() and write_block(args.readme, readme_summary(args.out, classify)):
        print(f"wrote the summary into {args.readme}")


# Sections other scripts write into the same doc (the compiler coverage, the spread over seed
# runs, the search headroom, the credit study, the public folders) and the prose around them
# follow this script's own part: everything from the first of their markers on is kept as it
# is when this script rewrites the rest.
KEPT = (COMPILER_BEGIN, SEEDS_BEGIN, HEADROOM_BEGIN, CREDIT_BEGIN, PUBLIC_BEGIN)


def kept_blocks(text: str) -> str:
    starts = [i for i in (text.find(marker) for marker in KEPT) if i >= 0]
    return "\n" + text[min(starts):] if starts else ""


def results_markdown(out: Path, expert_run: Path | None = None, curve: Path | None = None) -> str:
    record = json.loads((out / COMPARE_FILE).read_text())
    rows = load_mode_rows(out)
    metrics, levels = ablation_metrics(rows), ablation_level_metrics(rows)
    cases = record.get("cases")
    walls = record.get("wall_s", {})
    lines = [
        "# Measured results: the offline agent on npukernelbench", "",
        "Produced by `benchmarks/offline_suite.py` (the code path of "
        "`sage bench npukernelbench --compare`); the figures below are copied from its output by the "
        "script, as measured.", "",
        f"- command: `{record.get('command', '?')}`",
        f"- commit: {record.get('commit', 'not recorded')}",
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
        "Over the counted tasks (n). Speedups are **end to end** (e2e: host dispatch overlapped with the "
        "device, the scored time) unless marked device. fast_p (KernelBench): the share of all counted tasks "
        "that are correct and have speedup > p. Geomean (solved): over the correct tasks; geomean (all): over "
        "all counted tasks with a task that is not correct counted as 1x. Roofline: the mean fraction of the "
        "essential-work bound (launch excluded) over device time, of the correct tasks.", "",
        *_table(("mode", "epoch"), [((m, str(e + 1)), s) for m, ep in metrics.items() for e, s in ep.items()]),
        "", IntervalSection().render(rows, out) or "",
        *(["", "## Learning curve", "", f"![learning curve]({curve.as_posix()})",
           "", "Correct share and geometric-mean speedup of the solved tasks per epoch, one line and 95 % band "
           "per mode (sage.bench.plots.learning_curve)."] if curve is not None and len(metrics) > 1 else []),
        "", "## Per level", "",
        *_table(("mode", "epoch", "level"), [((m, str(e + 1), lv), s) for m, ep in levels.items()
                                              for e, lvs in ep.items() for lv, s in lvs.items()]),
        "", *failure_section(rows, metrics), "",
        "", *reference_split_section(record), "",
        *expert_section(expert_run),
        "", "## Tasks whose result depends on the memory mode", "",
        "End-to-end speedup of the final kernel per mode and epoch (`wrong`: it ran but was not correct); tasks that "
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
    notes.append(f"- The compiler cannot lower {no_kernel} of {len(finals)} tasks (status no_kernel in {mode}, "
                 f"epoch {last + 1}; the reasons are grouped above); those count as failures in every mode, "
                 "which bounds the correctness rate.")
    base = metrics.get("none", {}).get(last)
    for m, ep in metrics.items():
        s = ep.get(last)
        if s is None or m == "none" or base is None:
            continue
        delta = "-" if s.geomean_speedup is None or base.geomean_speedup is None else \
            f"{s.geomean_speedup / base.geomean_speedup:.3f}x of none's"
        notes.append(f"- {m}, epoch {last + 1}: {s.correct} correct of {s.tasks} (none: {base.correct}); "
                     f"geomean e2e speedup (solved) {_x(s.geomean_speedup)} ({delta}); fast_1 e2e {_pct(s.fast_1)} "
                     f"(none: {_pct(base.fast_1)}).")
    for m, ep in metrics.items():
        if len(ep) > 1:
            first, final = ep[min(ep)], ep[max(ep)]
            notes.append(f"- {m}: geomean e2e speedup (solved) epoch 1 {_x(first.geomean_speedup)} -> epoch {max(ep) + 1} "
                         f"{_x(final.geomean_speedup)}; correct {first.correct} -> {final.correct}.")
    return notes


def _table(keys: tuple[str, ...], items: list[tuple[tuple[str, ...], SuiteMetrics]]) -> list[str]:
    cols = [*keys, "n", "executed", "correct", "fast_1 e2e", "fast_1.1 e2e", "geomean e2e (solved)",
            "geomean e2e (all)", "fast_1 device", "geomean device (solved)", "roofline"]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for key, m in items:
        lines.append("| " + " | ".join([*key, str(m.tasks), _pct(m.execution_rate), _pct(m.correctness_rate),
                                        _pct(m.fast_1), _pct(m.fast_1_1), _x(m.geomean_speedup),
                                        _x(m.geomean_speedup_all), _pct(m.device_fast_1),
                                        _x(m.device_geomean_speedup), _pct(m.mean_roofline_fraction)]) + " |")
    return lines


def failure_section(rows: list[ResultRow], metrics: dict) -> list[str]:
    """The last epoch's failed tasks of the first mode, grouped by reason class (the classes
    of benchmarks/compiler_coverage.py)."""
    mode, epochs = next(iter(metrics.items()))
    last = max(epochs)
    classes: dict[str, list[str]] = {}
    for r in final_rows([r for r in rows if r.extra.get("ablation_mode") == mode], last):
        if r.status == "correct":
            continue
        ev = r.evaluation
        reason = (ev.reason if ev is not None else None) or r.extra.get("reason") or ""
        error = f"{ev.error.type}: {ev.error.message}" if ev is not None and ev.error is not None else None
        classes.setdefault(classify({"status": r.status, "reason": reason, "error": error}), []).append(r.task)
    lines = [f"## Failures by reason class ({mode}, epoch {last + 1})", "", "| class | tasks |", "|---|---|"]
    for name, tasks in sorted(classes.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        lines.append(f"| {name} ({len(tasks)}) | {', '.join(sorted(tasks))} |")
    return lines


def reference_split_section(record: dict) -> list[str]:
    """Where the vendor's end-to-end time goes, per level, over the cases the run evaluated:
    the analytic reference model (docs/reference-model.md) re-run on the same case shapes."""
    from sage.bench.reference import reference_time
    from sage.bench.tasks import SUITE_DIR, load_tasks

    tasks, _ = load_tasks(SUITE_DIR)
    cases = record.get("cases")
    sums: dict[str, list[float]] = {}
    for task in tasks:
        if task.level is None:           # the plain operators beside the levels are not in the run
            continue
        groups = task.cases()
        for args in groups[: cases or len(groups)]:
            ref = reference_time(task, args, record.get("preset") or "ascend910b2")
            acc = sums.setdefault(f"level{task.level}", [0.0] * 7)
            for i, v in enumerate((1, ref.end_to_end_us, ref.kernel_us, ref.device_fixed_us,
                                   ref.host_exposed_us, ref.launches, ref.syncs)):
                acc[i] += v
    lines = ["## Where the reference time goes, per level", "",
             "The vendor's end-to-end time summed over every evaluated case of the level, split into device work, "
             "device fixed cost (2.5 µs per kernel) and exposed host time (the device idle while the host dispatches, "
             "12.1 µs per kernel, or syncs): end to end = work + fixed + exposed host.", "",
             "| level | cases | end to end µs | device work | device fixed | exposed host | kernels per case | syncs per case |",
             "|---|---|---|---|---|---|---|---|"]
    for level, (n, e2e, work, fixed, host, launches, syncs) in sorted(sums.items()):
        lines.append(f"| {level} | {int(n)} | {e2e:.0f} | {100 * work / e2e:.1f}% | {100 * fixed / e2e:.1f}% "
                     f"| {100 * host / e2e:.1f}% | {launches / n:.1f} | {syncs / n:.1f} |")
    return lines


def expert_section(run: Path | None) -> list[str]:
    """The expert library kernels (sage.bench.reference.kernel_files) evaluated as candidates."""
    from sage.bench.metrics import compute_metrics, metrics_by_level
    from sage.bench.runner import RESULTS_FILE, read_rows

    if run is None or not (run / RESULTS_FILE).is_file():
        return []
    finals = [r for r in final_rows(read_rows(run / RESULTS_FILE)) if r.evaluation is not None]
    note = (run / "command.txt").read_text(encoding="utf-8").strip() if (run / "command.txt").is_file() else "?"
    note = rerunnable(note, ROOT)
    kernels = [r for r in finals if r.status != "no_kernel"]
    return ["## The expert library kernels as candidates", "",
            f"`{note}`: the library's kernel files (one per task whose reference is a single library operator; "
            f"{len(kernels)} of {len(finals)} tasks have one, the others count as no kernel) evaluated against the "
            "vendor model. They are the DSL's generic expert schedules, one kernel per eager op, so their "
            "end-to-end speedup shows what the vendor's fixed costs and efficiencies leave to a plain port.", "",
            *_table(("level",), [(("all",), compute_metrics(r.evaluation for r in finals)),
                                 *[((lv,), m) for lv, m in metrics_by_level(r.evaluation for r in finals).items()]])]


if __name__ == "__main__":
    main()
