"""Two runs of the same suite side by side: per level, what moved, and the tasks that moved most.

    .venv/bin/python benchmarks/run_delta.py BEFORE AFTER [--label-before X] [--label-after Y]
                                             [--why TEXT] [--doc docs/results.md --key refit]

BEFORE and AFTER are `sage bench` output folders (results.jsonl), or offline-suite folders
(their none/ mode is read). Its use here: the offline suite run twice on one checkout, once
with the torch_npu model's parameters of an earlier commit put back
(`git show REV:sage/bench/reference/vendor_params.json > sage/bench/reference/vendor_params.json`
in a scratch worktree), so the difference is the reference model's alone: the candidate
kernels and their simulated times are the same in both runs, only the modelled torch_npu
time under them moves. The per-task figure is the end-to-end speedup of the final kernel;
a task correct in one run and not the other is listed as such.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.provenance import run_line  # noqa: E402
from benchmarks.suite_summary import pct, place_block, x  # noqa: E402
from sage.bench.metrics import metrics_by_level  # noqa: E402
from sage.bench.runner import RESULTS_FILE, final_rows, read_rows  # noqa: E402

MOVERS = 8


def rows_of(folder: Path) -> list:
    path = folder / RESULTS_FILE
    if not path.exists() and (folder / "none" / RESULTS_FILE).exists():
        path = folder / "none" / RESULTS_FILE
    rows = [r for r in final_rows(read_rows(path)) if r.evaluation is not None]
    if not rows:
        raise SystemExit(f"error: no evaluated rows in {path}")
    return rows


def level_lines(before: list, after: list, labels: tuple[str, str]) -> list[str]:
    b, a = (metrics_by_level(r.evaluation for r in rows) for rows in (before, after))
    head = ["level", "n", f"correct {labels[0]}", f"correct {labels[1]}", f"fast_1 {labels[0]}",
            f"fast_1 {labels[1]}", f"geomean e2e (solved) {labels[0]}", f"geomean e2e (solved) {labels[1]}", "ratio"]
    lines = ["| " + " | ".join(head) + " |", "|---" * len(head) + "|"]
    for level in sorted(set(b) | set(a)):
        mb, ma = b.get(level), a.get(level)
        gb = mb.geomean_speedup if mb else None
        ga = ma.geomean_speedup if ma else None
        ratio = f"{ga / gb:.3f}" if gb and ga else "-"
        lines.append("| " + " | ".join([level, str((ma or mb).tasks), pct(mb.correctness_rate if mb else None),
                                         pct(ma.correctness_rate if ma else None), pct(mb.fast_1 if mb else None),
                                         pct(ma.fast_1 if ma else None), x(gb), x(ga), ratio]) + " |")
    return lines


def mover_lines(before: list, after: list, labels: tuple[str, str]) -> list[str]:
    old = {r.task: r.evaluation for r in before}
    moved, flipped = [], []
    for r in after:
        e, o = r.evaluation, old.get(r.task)
        if o is None:
            continue
        if e.correct != o.correct:
            flipped.append(f"- {r.task}: {'correct' if o.correct else o.status} {labels[0]}, "
                           f"{'correct' if e.correct else e.status} {labels[1]}")
        elif e.correct and e.speedup and o.speedup:
            moved.append((abs(math.log(e.speedup / o.speedup)), r.task, o.speedup, e.speedup))
    moved.sort(reverse=True)
    lines = [f"The {min(MOVERS, len(moved))} correct tasks whose end-to-end speedup moved most:", ""]
    lines += [f"- {task}: {x(s0)} {labels[0]}, {x(s1)} {labels[1]} ({s1 / s0:.2f}x)" for _, task, s0, s1 in moved[:MOVERS]]
    if flipped:
        lines += ["", "Tasks correct in one run only:", "", *flipped]
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--label-before", default="before")
    parser.add_argument("--label-after", default="after")
    parser.add_argument("--why", default="", help="a sentence on what differs between the runs, printed above the table")
    parser.add_argument("--doc", type=Path, help="also write the block into PATH between its markers")
    parser.add_argument("--key", default="run-delta", help="the block's marker name in --doc")
    args = parser.parse_args()
    before, after = rows_of(args.before), rows_of(args.after)
    labels = (args.label_before, args.label_after)
    body = level_lines(before, after, labels) + [""] + mover_lines(before, after, labels)
    print("\n".join(body))
    if args.doc is not None:
        command = " ".join(["benchmarks/run_delta.py", str(args.before), str(args.after),
                            f"--label-before {args.label_before}", f"--label-after {args.label_after}",
                            f"--doc {args.doc} --key {args.key}"])
        text = "\n".join([run_line(command), "", *([args.why, ""] if args.why else []), *body])
        place_block(args.doc, text, f"<!-- {args.key} -->", f"<!-- /{args.key} -->")
    return 0


if __name__ == "__main__":
    sys.exit(main())
