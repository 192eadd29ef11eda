"""Wall time of evaluating the whole npukernelbench suite.

Two passes with 2 workers: a reference-only run (every case's reference forward on CPU
torch plus the torch_npu stand-in, which simulates the DSL library kernels at each shape),
then a kernel pass that evaluates the library's ready kernel files
(`sage.bench.reference.kernel_files`, one per task a library kernel covers) as solutions
in the sandboxed simulator. `--kernels DIR` evaluates another folder instead.
Target: the reference pass of the full suite in under 5 minutes on 2 cores.

The reference model caches its timings (and its calibration) on disk. By default the
benchmark starts from an empty cache in a temporary folder, so the first pass is a cold
start; `--passes 2` repeats it on the now warm cache; `--cache-dir DIR` uses a given cache.

    .venv/bin/python benchmarks/suite_eval.py [--workers 2] [--level N] [--passes 2] [--kernels DIR]
    .venv/bin/python benchmarks/suite_eval.py --out runs/expert_kernels   # keep the kernel pass's rows

The reference model is analytic (docs/reference-model.md), so the reference pass no longer
simulates anything; the kernel pass simulates every candidate at full size. With `--out`,
the kernel pass's rows are kept in OUT (results.jsonl, report.md, command.txt) for
`benchmarks/offline_suite.py` to put into docs/results.md.
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from sage.bench.runner import BenchConfig, KernelDirSolver, run_bench

TARGET_S = 300.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--level", type=int, action="append", help="only these levels (default: all)")
    parser.add_argument("--cases", type=int, default=None, help="first K cases per task (default: all)")
    parser.add_argument("--kernels", type=Path, default=None,
                        help="kernel folder for the kernel pass (default: the library's kernel files)")
    parser.add_argument("--no-kernels", action="store_true", help="skip the kernel pass")
    parser.add_argument("--preset", default="ascend910b2")
    parser.add_argument("--passes", type=int, default=1, help="reference passes (the 2nd on a warm cache)")
    parser.add_argument("--cache-dir", type=Path, default=None, help="reference cache (default: a fresh one)")
    parser.add_argument("--out", type=Path, default=None, help="keep the kernel pass's rows in this folder")
    args = parser.parse_args()
    command = "python " + " ".join(shlex.quote(a) for a in [f"benchmarks/{Path(__file__).name}", *sys.argv[1:]])

    with tempfile.TemporaryDirectory(prefix="sage-suite-eval-") as tmp:
        # Workers inherit the environment: they all share this cache.
        os.environ["SAGE_CACHE_DIR"] = str(args.cache_dir or Path(tmp) / "cache")
        partial = bool(args.level or args.cases)
        ok = True
        for n in range(args.passes):
            config = BenchConfig(target="npukernelbench", levels=args.level, cases=args.cases,
                                 workers=args.workers, preset=args.preset, out=Path(tmp) / f"reference{n}")
            started = time.perf_counter()
            run = run_bench(config, solver=None)
            wall = time.perf_counter() - started
            cache = "given" if args.cache_dir else ("cold" if n == 0 else "warm")
            report(f"reference pass {n + 1} ({cache} cache)", run.rows, wall, args.workers)
            verdict = "not checked (partial suite)" if partial else ("met" if wall < TARGET_S else "NOT met")
            print(f"target: full suite reference pass < {TARGET_S:.0f} s on 2 cores -> {verdict}")
            ok = ok and (partial or wall < TARGET_S)
        if not args.no_kernels:
            kernels = args.kernels
            if kernels is None:
                from sage.bench.reference.kernel_files import write_library_kernels

                kernels = Path(tmp) / "library-kernels"
                written = write_library_kernels(kernels, preset=args.preset, levels=args.level)
                print(f"library kernel files written for {len(written)} tasks")
            solver = KernelDirSolver(kernels=kernels, preset=args.preset, cases=args.cases)
            kconfig = config.model_copy(update={"out": args.out or Path(tmp) / "kernels"})
            started = time.perf_counter()
            krun = run_bench(kconfig, solver=solver)
            report(f"kernel pass ({kernels})", krun.rows, time.perf_counter() - started, args.workers)
            if args.out is not None:
                from sage.bench.report import write_report

                (args.out / "command.txt").write_text(command + "\n", encoding="utf-8")
                write_report(args.out)
    return 0 if ok else 1


def report(title: str, rows: list, wall: float, workers: int) -> None:
    finals = [r for r in rows if r.final]
    by_status: dict[str, int] = defaultdict(int)
    by_level: dict[str, float] = defaultdict(float)
    for r in finals:
        by_status[r.status] += 1
        by_level[f"level{r.level}"] += r.wall_s
    cases = sum(len(r.reference.cases) for r in finals if r.reference) + \
        sum(len(r.evaluation.cases) for r in finals if r.evaluation)
    task_walls = sorted((r.wall_s for r in finals), reverse=True)
    print(f"== {title}: {len(finals)} tasks, {cases} cases, {workers} workers")
    print(f"wall time: {wall:.1f} s   (task time summed over workers: {sum(task_walls):.1f} s, "
          f"median task {statistics.median(task_walls) if task_walls else 0:.2f} s)")
    print("status: " + ", ".join(f"{k} {v}" for k, v in sorted(by_status.items())))
    print("task time by level: " + ", ".join(f"{k} {v:.1f} s" for k, v in sorted(by_level.items())))
    print("slowest tasks: " + ", ".join(f"{r.task} {r.wall_s:.1f} s" for r in
                                        sorted(finals, key=lambda r: -r.wall_s)[:6]))
    problems = [r for r in finals if r.status not in ("reference_ok", "correct", "no_kernel")]
    for r in problems[:10]:
        reason = (r.reference.reason if r.reference else None) or (r.evaluation.reason if r.evaluation else "")
        print(f"  {r.task}: {r.status}: {(reason or '')[:140]}")


if __name__ == "__main__":
    sys.exit(main())
