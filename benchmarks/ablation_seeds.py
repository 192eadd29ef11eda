"""The spread of a memory ablation over seeds: one `benchmarks/offline_suite.py` run per seed
(each in its own --out folder), summarised per mode and epoch as the mean and the range of
the correct count, fast_1 and the geometric-mean end-to-end speedup over all counted tasks,
each with the 95 % bootstrap interval of its mean over the runs (the tasks resampled with
replacement, the same draw in every run: sage.bench.ablation_stats.pooled_intervals).

    .venv/bin/python benchmarks/offline_suite.py --out runs/ablation_s0 --seed 0 --epochs 3 --iterations 1 ...
    .venv/bin/python benchmarks/offline_suite.py --out runs/ablation_s1 --seed 1 ...
    .venv/bin/python benchmarks/ablation_seeds.py runs/ablation_s0 runs/ablation_s1 runs/ablation_s2 [--json] \
        [--doc docs/ablation.md] [--plot docs/img/ablation_seeds.png] [--save docs/data/ablation_seeds]

A run is a folder or a summary that --save wrote (`<folder name>.json`: the run's command,
commit and wall time, its figures per mode and epoch, and each final kernel's verdict). Run
folders are tens of MB and not committed; the summaries are, so the table and the plot
regenerate from them:

    .venv/bin/python benchmarks/ablation_seeds.py docs/data/ablation_seeds/*.json --doc ... --plot ...

--doc writes the table into that file: between its seeds markers, or appended with them
(benchmarks/offline_suite.py keeps the block when it rewrites the doc).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.suite_summary import place_block, rerunnable  # noqa: E402
from sage.bench.ablation import COMPARE_FILE, finals_by_mode_epoch, load_mode_rows  # noqa: E402
from sage.bench.ablation_stats import RESAMPLES, pooled_intervals  # noqa: E402
from sage.bench.evaluate import TaskEvaluation  # noqa: E402
from sage.bench.metrics import SuiteMetrics, compute_metrics  # noqa: E402

SEEDS_BEGIN, SEEDS_END = "<!-- seeds -->", "<!-- /seeds -->"


# A figure of the suite metrics, as the table shows it (a figure a run cannot have counts as nothing gained).
STATS: dict[str, Callable[[SuiteMetrics], float]] = {
    "correct": lambda m: float(m.correct), "fast_1": lambda m: m.fast_1 or 0.0,
    "geomean_all": lambda m: m.geomean_speedup_all or 1.0}
FIGURES = tuple(STATS)
TASK_FIELDS = ("status", "executed", "correct", "speedup")   # what the bootstrap needs of each final kernel


def summarise(run: Path) -> dict:
    """A run folder's provenance (compare.json), its figures (mode -> epoch -> figure) and each
    final kernel's verdict (mode -> epoch -> task -> TASK_FIELDS), from which the figures and
    their bootstrap intervals recompute."""
    record = json.loads((run / COMPARE_FILE).read_text()) if (run / COMPARE_FILE).is_file() else {}
    finals = finals_by_mode_epoch(load_mode_rows(run))
    metrics = {mode: {e: compute_metrics(r.evaluation for r in rows) for e, rows in epochs.items()}
               for mode, epochs in finals.items()}
    figures = {mode: {e: {k: stat(m) for k, stat in STATS.items()} for e, m in epochs.items()}
               for mode, epochs in metrics.items()}
    tasks = {mode: {e: {r.evaluation.task: [getattr(r.evaluation, f) for f in TASK_FIELDS] for r in rows}
                    for e, rows in epochs.items()}
             for mode, epochs in finals.items()}
    return {"run": run.name, **{k: record.get(k) for k in ("seed", "command", "commit", "wall_s")},
            "figures": figures, "tasks": tasks}


def dump(summary: dict) -> str:
    """A summary as indented JSON, each task's verdict on one line (a flat list of scalars)."""
    text = json.dumps(summary, indent=1)
    return re.sub(r"\[\s+([^\[\]{}]*?)\s+\]", lambda m: "[" + ", ".join(re.split(r",\s+", m.group(1))) + "]",
                  text) + "\n"


@functools.cache
def load(run: Path) -> dict:
    """summarise() of a run folder, or the summary --save wrote (epochs back to ints). Cached:
    the table, the intervals, the doc and --save all read the same runs, and a folder is tens of
    MB of rows; callers read the summary and never change it."""
    if run.is_dir():
        return summarise(run)
    saved = json.loads(run.read_text(encoding="utf-8"))
    for key in ("figures", "tasks"):
        if key in saved:
            saved[key] = {mode: {int(e): f for e, f in epochs.items()} for mode, epochs in saved[key].items()}
    return saved


def intervals(runs: list[Path]) -> dict[str, dict[int, dict[str, tuple[float, float] | None]]]:
    """mode -> epoch -> figure -> the 95 % bootstrap interval of its mean over the runs, the tasks
    resampled jointly (ablation_stats.pooled_intervals); empty when a summary predates the
    per-task verdicts."""
    summaries = [load(r) for r in runs]
    if not summaries or any("tasks" not in s for s in summaries):
        return {}
    out: dict[str, dict[int, dict[str, tuple[float, float] | None]]] = {}
    for mode, epochs in summaries[0]["tasks"].items():
        for e in epochs:
            if not all(e in s["tasks"].get(mode, {}) for s in summaries):
                continue
            per_run = [{task: TaskEvaluation(task=task, **dict(zip(TASK_FIELDS, fields, strict=True)))
                        for task, fields in s["tasks"][mode][e].items()} for s in summaries]
            out.setdefault(mode, {})[e] = pooled_intervals(per_run, STATS)
    return out


def spread(runs: list[Path]) -> dict[str, dict[int, dict[str, list[float]]]]:
    """mode -> epoch -> figure -> one value per run (the runs' order)."""
    out: dict[str, dict[int, dict[str, list[float]]]] = {}
    for summary in map(load, runs):
        for mode, epochs in summary["figures"].items():
            for e, f in epochs.items():
                figures = out.setdefault(mode, {}).setdefault(e, {k: [] for k in FIGURES})
                for k in FIGURES:
                    figures[k].append(f[k])
    return out


def markdown(table: dict[str, dict[int, dict[str, list[float]]]], runs: list[Path],
             cis: dict[str, dict[int, dict[str, tuple[float, float] | None]]] | None = None) -> str:
    """The spread table; with `cis` (intervals()), each figure also carries its 95 % interval."""
    cis = cis or {}

    def cell(values: list[float], fmt: str, ci: tuple[float, float] | None, scale: float = 1.0) -> str:
        mean = sum(values) / len(values)
        text = f"{scale * mean:{fmt}} ({scale * min(values):{fmt}}-{scale * max(values):{fmt}})"
        return text + (f" [{scale * ci[0]:{fmt}}, {scale * ci[1]:{fmt}}]" if ci else "")

    legend = "mean (min-max)" + (
        " [95 % bootstrap interval of the mean, the tasks resampled jointly in every run, "
        f"{RESAMPLES} resamples]" if cis else "")
    lines = [f"Over {len(runs)} run(s): {', '.join(str(r) for r in runs)}; {legend}.", "",
             "| mode | epoch | runs | correct | fast_1 % | geomean e2e (all) |", "|---|---|---|---|---|---|"]
    for mode, epochs in table.items():
        for e, f in sorted(epochs.items()):
            ci = cis.get(mode, {}).get(e, {})
            lines.append(f"| {mode} | {e + 1} | {len(f['correct'])} | {cell(f['correct'], '.1f', ci.get('correct'))} | "
                         f"{cell(f['fast_1'], '.1f', ci.get('fast_1'), 100.0)} | "
                         f"{cell(f['geomean_all'], '.3f', ci.get('geomean_all'))} |")
    return "\n".join(lines + verdict(table))


TARGET = ("sage", "atu", "uniform", "none")     # the claim: sage >= atu > uniform >= none


def verdict(table: dict[str, dict[int, dict[str, list[float]]]]) -> list[str]:
    """Whether the last epoch's means order the modes as the claim says, per figure."""
    if not all(m in table for m in TARGET):
        return []
    last = min(max(table[m]) for m in TARGET)
    parts = []
    for figure, name, fmt in (("correct", "correct", ".1f"), ("geomean_all", "geomean e2e (all)", ".4f")):
        sage, atu, uniform, none = (sum(v := table[m][last][figure]) / len(v) for m in TARGET)
        met = sage >= atu > uniform >= none
        parts.append(f"{name} {sage:{fmt}} / {atu:{fmt}} / {uniform:{fmt}} / {none:{fmt}}: "
                     f"{'met' if met else 'not met'}")
    return ["", f"The target at epoch {last + 1}, sage >= atu > uniform >= none on the means over the runs: "
            + "; ".join(parts) + "."]


def plot(table: dict[str, dict[int, dict[str, list[float]]]], path: Path) -> None:
    """Correct count and geomean e2e (all) per epoch and mode: the mean over the seed runs,
    the band from the lowest to the highest run."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    styles = [("o", "-"), ("s", "--"), ("^", "-."), ("D", ":")]
    for i, (mode, epochs) in enumerate(table.items()):
        marker, dash = styles[i % len(styles)]
        dodge = (i - (len(table) - 1) / 2) * 0.04     # equal curves side by side, not drawn over
        xs = [e + 1 + dodge for e in sorted(epochs)]
        for ax, figure in zip(axes, ("correct", "geomean_all")):
            values = [epochs[e][figure] for e in sorted(epochs)]
            line = ax.plot(xs, [sum(v) / len(v) for v in values], marker=marker, linestyle=dash, label=mode)[0]
            ax.fill_between(xs, [min(v) for v in values], [max(v) for v in values], color=line.get_color(),
                            alpha=0.15, linewidth=0)
    runs = max(len(f["correct"]) for epochs in table.values() for f in epochs.values())
    ticks = sorted({e + 1 for epochs in table.values() for e in epochs})
    # A span of at least 6 tasks and 5 % in speedup, so that a difference of a fraction of
    # a percent is not drawn across the whole axis.
    for ax, figure, least in zip(axes, ("correct", "geomean_all"), (6.0, 0.05)):
        values = [v for epochs in table.values() for f in epochs.values() for v in f[figure]]
        lo, hi = min(values), max(values)
        pad = max(least - (hi - lo), 0.0) / 2 + (hi - lo) * 0.1
        ax.set_ylim(lo - pad, hi + pad)
    for ax, label in zip(axes, ("correct tasks", "geomean e2e speedup, all tasks (failures 1x)")):
        ax.set_xlabel("epoch")
        ax.set_ylabel(label)
        ax.set_xticks(ticks)
        ax.grid(alpha=0.3)
    axes[0].legend(title="memory", loc="best", fontsize=8)
    axes[0].set_title(f"Correct tasks: mean of {runs} seed run(s), min-max band")
    axes[1].set_title(f"Geomean e2e: mean of {runs} seed run(s), min-max band")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", type=Path, nargs="+",
                        help="offline_suite.py --out folders or their --save summaries, one per seed")
    parser.add_argument("--json", action="store_true",
                        help='print {"spread": mode -> epoch -> figure -> one value per run, "intervals": '
                             'mode -> epoch -> figure -> [low, high]} instead of the table')
    parser.add_argument("--doc", type=Path, help="a markdown file to write the table into (its seeds block)")
    parser.add_argument("--plot", type=Path, help="a PNG of the learning curve over the seed runs (linked from --doc)")
    parser.add_argument("--save", type=Path, help="a folder to write each run folder's summary into (<name>.json)")
    args = parser.parse_args()
    missing = [r for r in args.runs if not r.is_dir() and not (r.is_file() and r.suffix == ".json")]
    if missing:
        sys.exit(f"ablation_seeds: neither a run folder nor a summary (.json): {', '.join(map(str, missing))}")
    if args.save is not None:
        args.save.mkdir(parents=True, exist_ok=True)
        for run in (r for r in args.runs if r.is_dir()):
            (args.save / f"{run.name}.json").write_text(dump(load(run)), encoding="utf-8")
            print(f"wrote {args.save / f'{run.name}.json'}")
    table = spread(args.runs)
    cis = intervals(args.runs)
    text = markdown(table, args.runs, cis)
    print(json.dumps({"spread": table, "intervals": cis}) if args.json else text)
    if args.plot is not None:
        plot(table, args.plot)
        print(f"wrote {args.plot}")
        if args.doc is not None:
            link = os.path.relpath(args.plot.resolve(), args.doc.resolve().parent)
            text += f"\n\n![learning curve over the seed runs]({link})"
    if args.doc is not None:
        write_doc(args.doc, text, args.runs)
        print(f"wrote the spread over seeds into {args.doc}")


def provenance(rec: dict, root: Path) -> str:
    """One run's line in the doc: its command (paths under `root`, the checkout the runs are
    kept in, made relative so the line reads as a command to rerun there), commit and wall
    time. A resumed run's wall time leaves out the part of the stopped mode that ran before
    the stop: compare.json only learns a mode's time when the mode finishes."""
    command = rerunnable(rec.get("command") or "?", root)
    minutes = sum((rec.get("wall_s") or {}).values()) / 60
    resumed = (" (resumed after a stop: the stopped mode's earlier time is not in it)"
               if "--resume" in command.split() else "")
    return f"- seed {rec.get('seed')}: `{command}` at {rec.get('commit') or '?'}, {minutes:.0f} min{resumed}"


def write_doc(path: Path, table: str, runs: list[Path]) -> None:
    records = [load(r) for r in runs]
    commands = "\n".join(provenance(rec, Path.cwd()) for rec in records)
    body = (f"## Spread over seeds\n\nWritten by `benchmarks/ablation_seeds.py --doc`, one "
            f"`benchmarks/offline_suite.py` run per seed (`--results` and `--readme` send that script's own summary "
            f"elsewhere, so a seed run leaves this file and the README as they are):\n\n{commands}\n\n{table}\n\n"
            "In [docs/memory.md](memory.md): how much any memory can add to the offline agent's kernels, "
            "measured as what a search four times as long finds (section 'Why the end-to-end modes do not "
            "separate'), and the synthetic credit study (`benchmarks/credit_assignment.py`), where adoption "
            "changes the outcome by construction.")
    place_block(path, body, SEEDS_BEGIN, SEEDS_END)


if __name__ == "__main__":
    main()
