"""The spread of a memory ablation over seeds: one `benchmarks/offline_suite.py` run per seed
(each in its own --out folder), summarised per mode and epoch as the mean and the range of
the correct count, fast_1 and the geometric-mean end-to-end speedup over all counted tasks.

    .venv/bin/python benchmarks/offline_suite.py --out runs/ablation_s0 --seed 0 --epochs 3 --iterations 1 ...
    .venv/bin/python benchmarks/offline_suite.py --out runs/ablation_s1 --seed 1 ...
    .venv/bin/python benchmarks/ablation_seeds.py runs/ablation_s0 runs/ablation_s1 runs/ablation_s2 [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sage.bench.ablation import ablation_metrics, load_mode_rows  # noqa: E402


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", type=Path, nargs="+", help="offline_suite.py --out folders, one per seed")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    missing = [r for r in args.runs if not r.is_dir()]
    if missing:
        sys.exit(f"ablation_seeds: no such run folder: {', '.join(map(str, missing))}")
    table = spread(args.runs)
    print(json.dumps(table) if args.json else markdown(table, args.runs))


if __name__ == "__main__":
    main()
