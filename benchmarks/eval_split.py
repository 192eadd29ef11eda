"""Where one task's evaluation time goes: making the cases, tracing and compiling them, and
per judged case the reference outputs, the float64 truth, the reference time model and the
sandboxed simulator run (issue 31: level1/13_cat took 481 s, over the 300 s per task).

    nice -n 5 .venv/bin/python benchmarks/eval_split.py /tmp/mkb/reference/npukernelbench_level1/13_cat.py

The offline agent's first answer is compiled (compile_task, default schedules, no search)
and judged by sage.bench.evaluate.evaluate_kernel on every case, the functions it calls
wrapped with timers; the slowest cases are listed with their split.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import sage.bench.evaluate as ev  # noqa: E402
from sage.agent.compiler.compiler import compile_task  # noqa: E402
from sage.bench.tasks import load_task  # noqa: E402
from sage.kernels import target_for  # noqa: E402

# the evaluate_kernel steps timed, by the name it calls them under
STEPS = ("select_cases", "reference_outputs", "truth_outputs", "reference_time_for", "run_sandboxed",
         "compare_outputs", "physical_check")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", type=Path)
    parser.add_argument("--cases", type=int, default=None, help="judge only the first K cases")
    parser.add_argument("--top", type=int, default=8, help="slowest cases listed")
    parser.add_argument("--max-input-gb", type=float, default=4.0,
                        help="input budget, as benchmarks/public_folders.py (a case above it is unsupported)")
    args = parser.parse_args()
    totals: dict[str, float] = defaultdict(float)
    per_case: list[dict[str, float]] = []

    def timed(name, fn):
        def wrapper(*a, **k):
            began = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                spent = time.perf_counter() - began
                totals[name] += spent
                if name == "reference_outputs":
                    per_case.append({})
                if per_case:
                    per_case[-1][name] = per_case[-1].get(name, 0.0) + spent
        return wrapper

    for name in STEPS:
        setattr(ev, name, timed(name, getattr(ev, name)))
    began = time.perf_counter()
    task = load_task(args.file, input_budget=int(args.max_input_gb * (1 << 30)))
    totals["load"] = time.perf_counter() - began
    t = time.perf_counter()
    compiled = compile_task(task, target_for("ascend910b2"))
    totals["trace+compile"] = time.perf_counter() - t
    t = time.perf_counter()
    evaluation = ev.evaluate_kernel(task, compiled.source, cases=args.cases)
    totals["evaluate"] = time.perf_counter() - t
    correct = sum(1 for r in evaluation.cases if r.correct)
    print(f"{task.name}: {evaluation.status}, {correct} of {len(evaluation.cases)} cases correct, "
          f"file {len(compiled.source.encode()) // 1024} KB, wall {time.perf_counter() - began:.0f} s")
    for name, s in totals.items():
        print(f"  {name:20s} {s:8.1f} s")
    slow = sorted(enumerate(per_case), key=lambda p: -sum(p[1].values()))[:args.top]
    for i, split in slow:
        inputs = evaluation.cases[i].inputs if i < len(evaluation.cases) else "?"
        print(f"  case {i} {inputs}: " + ", ".join(f"{k} {v:.1f}" for k, v in split.items()))


if __name__ == "__main__":
    main()
