"""What a better start could still gain: the offline agent with its default budget against the
same agent given many more simulator runs and refinement turns, task by task.

Memory can only change where the offline agent's schedule search starts (knob hints) and
which moves it tries first. If a search four times as long, with five evaluated attempts
instead of two, finds no faster kernels, no experience can: the modes of a memory ablation
then cannot separate, whatever the credit. Both runs are `benchmarks/offline_suite.py` runs
of one mode (`none`: no memory), one epoch, the same seed and commit:

    .venv/bin/python benchmarks/offline_suite.py --out runs/headroom_b4_i1 --modes none --epochs 1 \\
        --iterations 1 --search-budget 4 --cases 1 --seed 0 --results /tmp/x.md --readme /tmp/r.md
    .venv/bin/python benchmarks/offline_suite.py --out runs/headroom_b16_i4 --modes none --epochs 1 \\
        --iterations 4 --search-budget 16 --cases 1 --seed 0 --results /tmp/x.md --readme /tmp/r.md
    .venv/bin/python benchmarks/search_headroom.py runs/headroom_b4_i1 runs/headroom_b16_i4 \\
        [--doc docs/memory.md --doc docs/results.md] [--json]

--doc rewrites the block between the headroom markers of each file given (appended when a
file has none).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.suite_summary import place_block  # noqa: E402
from sage.bench.ablation import COMPARE_FILE, MODE_KEY, load_mode_rows  # noqa: E402
from sage.bench.metrics import compute_metrics  # noqa: E402
from sage.bench.runner import ResultRow, final_rows  # noqa: E402

BEGIN, END = "<!-- headroom:begin -->", "<!-- headroom:end -->"
GAINS = (1.02, 1.05)


def _run(folder: Path) -> tuple[dict, dict[str, ResultRow]]:
    record = json.loads((folder / COMPARE_FILE).read_text())
    rows = [r for r in load_mode_rows(folder) if r.extra[MODE_KEY] == "none"]
    return record, {r.task: r for r in final_rows(rows, epoch=0)}


def _speedup(row: ResultRow) -> float | None:
    ev = row.evaluation
    return ev.speedup if ev is not None and ev.correct and ev.speedup else None


def _geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def compare(base_dir: Path, wide_dir: Path) -> dict:
    (base_rec, base), (wide_rec, wide) = _run(base_dir), _run(wide_dir)
    both = sorted(t for t in set(base) & set(wide) if _speedup(base[t]) and _speedup(wide[t]))
    ratios = {t: _speedup(wide[t]) / _speedup(base[t]) for t in both}
    ranked = sorted(ratios.items(), key=lambda kv: -kv[1])

    def budget(rec: dict) -> dict:
        return {"search_budget": rec.get("search_budget", 4), "iterations": rec.get("iterations"),
                "commit": rec.get("commit"), "seed": rec.get("seed"), "cases": rec.get("cases"),
                "wall_s": sum(rec.get("wall_s", {}).values())}

    def failures(rows: dict[str, ResultRow]) -> dict[str, int]:
        out: dict[str, int] = {}
        for r in rows.values():
            if not _speedup(r):
                out[r.status] = out.get(r.status, 0) + 1
        return dict(sorted(out.items()))

    return {
        "base": {"run": str(base_dir), **budget(base_rec), "tasks": len(base),
                 "correct": sum(1 for r in base.values() if _speedup(r)), "failures": failures(base),
                 "geomean_all": compute_metrics(r.evaluation for r in base.values()).geomean_speedup_all},
        "wide": {"run": str(wide_dir), **budget(wide_rec), "tasks": len(wide),
                 "correct": sum(1 for r in wide.values() if _speedup(r)), "failures": failures(wide),
                 "geomean_all": compute_metrics(r.evaluation for r in wide.values()).geomean_speedup_all},
        "both_correct": len(both),
        "geomean_both": {"base": _geomean([_speedup(base[t]) for t in both]) if both else None,
                         "wide": _geomean([_speedup(wide[t]) for t in both]) if both else None},
        "gained": {f"{g:.2f}": sum(1 for r in ratios.values() if r >= g) for g in GAINS},
        "lost": {f"{g:.2f}": sum(1 for r in ratios.values() if r <= 1 / g) for g in GAINS},
        "largest": [{"task": t, "ratio": round(r, 4)} for t, r in ranked[:5]],
        "smallest": [{"task": t, "ratio": round(r, 4)} for t, r in ranked[-3:]],
    }


def markdown(result: dict) -> str:
    b, w = result["base"], result["wide"]

    def row(label: str, r: dict, geo: float | None) -> str:
        return (f"| {label} | {r['search_budget']} | {r['iterations'] + 1} | {r['correct']}/{r['tasks']} | "
                f"{r['geomean_all']:.4f}x | {geo:.4f}x | {r['wall_s'] / 60:.1f} min |")

    largest = ", ".join(f"{x['task']} {x['ratio']:.3f}x" for x in result["largest"][:3])
    gained = ", ".join(f"{n} at least {g}x" for g, n in result["gained"].items())
    lost = ", ".join(f"{n} at most 1/{g}x" for g, n in result["lost"].items())
    commits = b["commit"] if b["commit"] == w["commit"] else f"{b['commit']} and {w['commit']}"
    failed = "; ".join(f"{label}: " + ", ".join(f"{n} {status}" for status, n in r["failures"].items())
                       for label, r in (("default", b), ("wide", w)))
    return "\n".join([
        f"`none` mode, seed {b['seed']}, {b['cases']} case per task, commit {commits}:",
        "",
        "| agent | search runs | evaluated attempts | correct | geomean e2e (all) | "
        f"geomean e2e ({result['both_correct']} correct in both) | wall |",
        "|---|---|---|---|---|---|---|",
        row("default budget", b, result["geomean_both"]["base"]),
        row("4x search, 5 attempts", w, result["geomean_both"]["wide"]),
        "",
        f"Per task, wide against default over the {result['both_correct']} tasks correct in both: {gained}; "
        f"{lost}. Largest ratios: {largest}. Tasks not correct ({failed}).",
        "",
        "Reproduce: the commands in `benchmarks/search_headroom.py`'s docstring.",
    ])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("base", type=Path, help="offline_suite.py run folder at the default budget")
    parser.add_argument("wide", type=Path, help="offline_suite.py run folder with a larger budget")
    parser.add_argument("--doc", type=Path, action="append", default=[],
                        help="a markdown file whose headroom block is rewritten (repeatable)")
    parser.add_argument("--json", action="store_true", help="print the comparison as JSON")
    args = parser.parse_args()
    for folder in (args.base, args.wide):
        if not (folder / COMPARE_FILE).is_file():
            parser.error(f"{folder} is not an offline_suite.py run folder (no {COMPARE_FILE})")
    result = compare(args.base, args.wide)
    if args.json:
        print(json.dumps(result, indent=1))
    else:
        print(markdown(result))
    for doc in args.doc:
        place_block(doc, markdown(result), BEGIN, END)
        print(f"wrote the headroom comparison into {doc}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
