"""The spread of a memory ablation over seeds: one `benchmarks/offline_suite.py` run per seed
(each in its own --out folder), summarised per mode and epoch as the mean and the range of
the correct count, fast_1 and the geometric-mean end-to-end speedup over all counted tasks.

    .venv/bin/python benchmarks/offline_suite.py --out runs/ablation_s0 --seed 0 --epochs 3 --iterations 1 ...
    .venv/bin/python benchmarks/offline_suite.py --out runs/ablation_s1 --seed 1 ...
    .venv/bin/python benchmarks/ablation_seeds.py runs/ablation_s0 runs/ablation_s1 runs/ablation_s2 [--json] \
        [--doc docs/ablation.md]

--doc writes the table into that file: between its seeds markers, or appended with them
(benchmarks/offline_suite.py keeps the block when it rewrites the doc).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.suite_summary import write_block  # noqa: E402
from sage.bench.ablation import COMPARE_FILE, ablation_metrics, load_mode_rows  # noqa: E402

SEEDS_BEGIN, SEEDS_END = "<!-- seeds -->", "<!-- /seeds -->"


def spread(runs: list[Path]) -> dict[str, dict[int, dict[str, list[float]]]]:
    """mode -> epoch -> figure -> one value per run (the runs' order)."""
    out: dict[str, dict[int, dict[str, list[float]]]] = {}
    for run in runs:
        for mode, epochs in ablation_metrics(load_mode_rows(run)).items():
            for e, m in epochs.items():
                figures = out.setdefault(mode, {}).setdefault(e, {"correct": [], "fast_1": [], "geomean_all": []})
                figures["correct"].append(float(m.correct))
                figures["fast_1"].append(m.fast_1 or 0.0)
                figures["geomean_all"].append(m.geomean_speedup_all or 1.0)
    return out


def markdown(table: dict[str, dict[int, dict[str, list[float]]]], runs: list[Path]) -> str:
    def cell(values: list[float], fmt: str) -> str:
        mean = sum(values) / len(values)
        return f"{mean:{fmt}} ({min(values):{fmt}}-{max(values):{fmt}})"

    lines = [f"Over {len(runs)} run(s): {', '.join(str(r) for r in runs)}; mean (min-max).", "",
             "| mode | epoch | runs | correct | fast_1 | geomean e2e (all) |", "|---|---|---|---|---|---|"]
    for mode, epochs in table.items():
        for e, f in sorted(epochs.items()):
            lines.append(f"| {mode} | {e + 1} | {len(f['correct'])} | {cell(f['correct'], '.1f')} | "
                         f"{cell([100 * v for v in f['fast_1']], '.1f')} % | {cell(f['geomean_all'], '.3f')}x |")
    return "\n".join(lines)


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
    parser.add_argument("runs", type=Path, nargs="+", help="offline_suite.py --out folders, one per seed")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--doc", type=Path, help="a markdown file to write the table into (its seeds block)")
    parser.add_argument("--plot", type=Path, help="a PNG of the learning curve over the seed runs (linked from --doc)")
    args = parser.parse_args()
    missing = [r for r in args.runs if not r.is_dir()]
    if missing:
        sys.exit(f"ablation_seeds: no such run folder: {', '.join(map(str, missing))}")
    table = spread(args.runs)
    print(json.dumps(table) if args.json else markdown(table, args.runs))
    text = markdown(table, args.runs)
    if args.plot is not None:
        plot(table, args.plot)
        print(f"wrote {args.plot}")
        if args.doc is not None:
            link = os.path.relpath(args.plot.resolve(), args.doc.resolve().parent)
            text += f"\n\n![learning curve over the seed runs]({link})"
    if args.doc is not None:
        write_doc(args.doc, text, args.runs)
        print(f"wrote the spread over seeds into {args.doc}")


def write_doc(path: Path, table: str, runs: list[Path]) -> None:
    records = [json.loads((r / COMPARE_FILE).read_text()) for r in runs if (r / COMPARE_FILE).is_file()]
    commands = "\n".join(f"- seed {rec.get('seed')}: `{rec.get('command', '?')}` at {rec.get('commit', '?')}, "
                         f"{sum(rec.get('wall_s', {}).values()) / 60:.0f} min" for rec in records)
    body = (f"## Spread over seeds\n\nWritten by `benchmarks/ablation_seeds.py --doc`, one "
            f"`benchmarks/offline_suite.py` run per seed:\n\n{commands}\n\n{table}")
    if path.exists() and write_block(path, body, SEEDS_BEGIN, SEEDS_END):
        return
    doc = path.read_text(encoding="utf-8").rstrip("\n") + "\n\n" if path.exists() else ""
    path.write_text(f"{doc}{SEEDS_BEGIN}\n{body}\n{SEEDS_END}\n", encoding="utf-8")


if __name__ == "__main__":
    main()
