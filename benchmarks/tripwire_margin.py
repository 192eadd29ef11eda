"""How close honest kernels come to the physical-bound tripwire (sage/npu/bound.py).

For every honest run (benchmarks/honest_kernels.py: the examples, the library's and the offline
agent's kernels, each on its task's cases) it computes the run's floor, its essential work
(the reference forward's essential bytes and cube FLOPs, as the evaluator does) at the
simulator's fastest rates, and divides it by the run's `kernel_us` (its kernels' durations
summed, no launch or gap cost), the time the tripwire judges. An honest run stays at or below about 1,
a forged one claims more. It reports the distribution of that ratio, the largest and the
kernel that reaches it, and checks that `bound.TRIPWIRE_RATIO` is more than 10 % above
every honest run.

Runs are in-process (`run_kernel_source`: the same functional run and replay as the sandbox,
without the fork); each is also judged correct or not against the reference.

    .venv/bin/python benchmarks/tripwire_margin.py [--cases N] [--source agent ...] [--json] [--doc docs/security.md]

--doc rewrites the block between the tripwire-margin markers of the file (appended when it
has none). Exit status 1 when an honest run comes within 10 % of the tripwire.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.honest_kernels import SOURCES, honest_runs  # noqa: E402
from benchmarks.suite_summary import place_block  # noqa: E402
from sage.npu import bound  # noqa: E402

BEGIN, END = "<!-- tripwire-margin:begin -->", "<!-- tripwire-margin:end -->"
MARGIN = 1.10      # no honest run within 10 % of the tripwire
SHOWN = 5


def measure_run(run, spec) -> dict:
    """One honest run: its floor, kernel time and their ratio, and whether it is correct."""
    from sage.bench.correctness import compare_outputs
    from sage.bench.evaluate import essential_of, output_specs, reference_outputs, truth_outputs
    from sage.npu.execute import run_kernel_source

    expected = reference_outputs(run.model, run.case)
    done = run_kernel_source(run.kernel, run.args, run.kwargs, preset=spec, expected=output_specs(expected))
    row = {"source": run.source, "run": run.label}
    if done.error is not None:
        return row | {"error": done.error.type}
    work = essential_of(run.model, run.case, expected, spec.name)
    work_us = done.profile.kernel_us
    truth = truth_outputs(run.model, run.case, len(expected))
    correct = compare_outputs(expected, done.outputs, truth=truth,
                              int_step=1 if "quant" in run.task.tags else 0).correct
    return row | {"correct": correct, "work_us": round(work_us, 4), "floor_us": round(bound.physical_floor_us(spec, work), 4),
                  "ratio": round(bound.floor_ratio(spec, work, work_us), 4), "bytes": work.bytes,
                  "cube_flops": work.cube_flops}


def measure(sources: tuple[str, ...], cases: int | None) -> dict:
    from sage.npu.hardware import load_preset

    spec = load_preset("ascend910b2")
    start = time.monotonic()
    rows = [measure_run(run, spec) for run in honest_runs(sources, cases)]
    timed = sorted((r for r in rows if "ratio" in r), key=lambda r: -r["ratio"])
    ratios = [r["ratio"] for r in timed]
    top = timed[0] if timed else None
    return {"sources": list(sources), "cases": cases, "runs": len(rows), "timed": len(timed),
            "incorrect": sum(1 for r in timed if not r["correct"]),
            "errors": [r for r in rows if "error" in r],
            "ratio": {"min": min(ratios), "median": statistics.median(ratios),
                      "p90": ratios[len(ratios) // 10], "max": ratios[0]} if ratios else None,
            "max_correct": next((r for r in timed if r["correct"]), None),
            "largest": timed[:SHOWN], "tripwire": bound.TRIPWIRE_RATIO,
            "margin": bound.TRIPWIRE_RATIO / top["ratio"] if top and top["ratio"] else None,
            "wall_s": round(time.monotonic() - start)}


def markdown(result: dict) -> str:
    cases = "every case" if result["cases"] is None else f"the first {result['cases']} case(s)"
    r = result["ratio"]
    judged = (f"{result['incorrect']} of them judged incorrect, kept: their timing is honest too"
              if result["incorrect"] else "every one judged correct")
    lines = [
        f"Floor / kernel time (kernel_us) of {result['timed']} honest runs ({', '.join(result['sources'])} kernels; "
        f"{cases} of each task; {judged}): minimum {r['min']:.4f}, median {r['median']:.3f}, 90th percentile "
        f"{r['p90']:.3f}, **maximum {r['max']:.4f}**. "
        f"The tripwire is at **{result['tripwire']:g}**, {result['margin']:.2f}x the maximum. The largest:", "",
        "| run | kernel | ratio | kernel_us | floor (us) | correct |", "|---|---|---|---|---|---|"]
    for row in result["largest"]:
        lines.append(f"| {row['run']} | {row['source']} | {row['ratio']:.4f} | {row['work_us']:.2f} | "
                     f"{row['floor_us']:.2f} | {'yes' if row['correct'] else 'no'} |")
    if result["errors"]:
        lines += ["", f"Runs that ended in an error (not timed): " + ", ".join(
            f"{e['source']} {e['run']} ({e['error']})" for e in result["errors"]) + "."]
    lines += ["", "Reproduce: `.venv/bin/python benchmarks/tripwire_margin.py --doc docs/security.md` "
                  f"(this block; {result['wall_s'] // 60} min)."]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=None, help="the first N cases of each task (default: all)")
    parser.add_argument("--source", choices=SOURCES, action="append", help="only these kernels (repeatable)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--doc", type=Path, action="append", default=[],
                        help="a markdown file whose tripwire-margin block is rewritten (repeatable)")
    args = parser.parse_args()
    result = measure(tuple(args.source or SOURCES), args.cases)
    print(json.dumps(result, indent=1) if args.json else markdown(result))
    for doc in args.doc:
        place_block(doc, markdown(result), BEGIN, END)
        print(f"wrote the tripwire margin into {doc}", file=sys.stderr)
    return 0 if result["margin"] and result["margin"] > MARGIN else 1


if __name__ == "__main__":
    raise SystemExit(main())
