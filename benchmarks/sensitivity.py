"""How the simulator's unsourced constants move the suite's speedup geomean and the MIX examples.

For every constant of `benchmarks/sensitivity_constants.py` (no public figure of its value), the
preset is varied x0.5 and x2 (and the two sync constants, 1 cycle each, also set to 100 and 1000
cycles) and fixed kernels are re-timed, never recompiled:

- the offline agent's kernels from a finished suite run, each one the run judged correct: the
  kernel runs once per case in the sandbox (`run_functional_sandboxed`: outputs and instruction
  records, which do not depend on the costs), and its records are replayed on every varied
  preset (`execute.time_run`). The reference model is timed on every varied preset too, so the
  table says which constants it shares (the "reference" column) instead of assuming it;
- the MIX examples (examples/kernels/matmul_bias_gelu_mix.py and flash_attention.py) on the
  inputs of benchmarks/simulator_speed.py, timed the same way (trusted files, run in-process).

A suite run to read comes from

    python benchmarks/offline_suite.py --out runs/offline_suite_all --modes none --epochs 1 --iterations 0

and this script takes its folder (or one mode folder of it):

    nice -n 5 .venv/bin/python benchmarks/sensitivity.py runs/offline_suite_all [--cases 1] [--limit N]
        [--json] [--doc docs/fidelity.md]

`--cases 1` (the default) re-times case 0 of each task only, as the output's heading says; the
geomean is over tasks of the per-task geomean over the re-timed cases, end to end as the suite's.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.sensitivity_constants import CONSTANTS, STRESS_CYCLES, STRESSED, perturbed, set_value  # noqa: E402
from benchmarks.sensitivity_report import markdown, write_doc  # noqa: E402
from sage.bench.ablation import mode_dirs  # noqa: E402
from sage.bench.evaluate import output_specs, reference_outputs, select_cases  # noqa: E402
from sage.bench.reference import reference_time  # noqa: E402
from sage.bench.runner import final_rows, read_rows  # noqa: E402
from sage.bench.tasks import kernel_args, load_task, parameter_kwargs  # noqa: E402
from sage.npu.execute import FunctionalRun, run_functional, time_run  # noqa: E402
from sage.npu.hardware import HardwareSpec, load_preset  # noqa: E402
from sage.npu.sandbox import run_functional_sandboxed  # noqa: E402

BASE = "x1"
FACTORS = (0.5, 2.0)
MIX_EXAMPLES = ("MIX matmul+bias+GELU", "flash attention")   # label prefixes in simulator_speed.workloads()


def variants(spec: HardwareSpec) -> dict[str, HardwareSpec]:
    """Variant key -> preset: the base, each constant at each factor, the stress values."""
    out = {BASE: spec}
    for i, c in enumerate(CONSTANTS):
        for f in FACTORS:
            out[f"c{i}x{f:g}"] = perturbed(spec, c, f)
    for path in STRESSED:
        for cycles in STRESS_CYCLES:
            out[f"{path}={cycles:g}"] = set_value(spec, path, cycles)
    return out


def results_file(folder: Path) -> Path:
    if (folder / "results.jsonl").exists():
        return folder / "results.jsonl"
    modes = mode_dirs(folder)
    if not modes:
        raise SystemExit(f"{folder}: no results.jsonl here or in a mode folder (benchmarks/offline_suite.py --out)")
    return next(iter(modes.values())) / "results.jsonl"


def task_times(row, specs: dict[str, HardwareSpec], cases: int) -> dict:
    """Per variant, the end-to-end speedup of each re-timed case, and the reference's times."""
    own = ROOT / "sage/bench/npukernelbench" / f"{row.task}.py"      # this checkout's task file, else the row's
    task = load_task(own if own.is_file() else row.path, seed=row.seed or 0)
    model, selected = select_cases(task, cases)
    stored = {c.index: c.speedup for c in row.evaluation.cases} if row.evaluation else {}
    out = {"task": row.task, "cases": [], "problem": None}
    for index, case in selected:
        if task.case_support(case):
            continue
        expected = reference_outputs(model, case)
        run = run_functional_sandboxed(row.source, kernel_args(case), parameter_kwargs(model),
                                       preset=specs[BASE], expected=output_specs(expected))
        if not isinstance(run, FunctionalRun) or run.error is not None:
            out["problem"] = f"case {index}: the kernel did not run again ({_error(run)})"
            return out
        refs = {k: reference_time(task, case, s).end_to_end_us for k, s in specs.items()}
        kernel = {}
        for k, s in specs.items():
            timed = time_run(run, s)
            if timed.profile is None:
                out["problem"] = f"case {index}, {k}: {timed.error.message if timed.error else 'no profile'}"
                return out
            kernel[k] = timed.profile.time_us
        out["cases"].append({"index": index, "stored_speedup": stored.get(index), "reference_us": refs,
                             "kernel_us": kernel, "speedup": {k: refs[k] / kernel[k] for k in specs}})
    return out


def _error(run) -> str:
    return run.error.message[:200] if getattr(run, "error", None) else type(run).__name__


def mix_times(specs: dict[str, HardwareSpec]) -> dict[str, dict[str, float]]:
    """Device µs of each MIX example per variant (the examples are the repository's own files)."""
    from benchmarks.simulator_speed import workloads

    out = {}
    for label, path, inputs in workloads():
        if not label.startswith(MIX_EXAMPLES):
            continue
        run = run_functional(path.read_text(), inputs, spec=specs[BASE], filename=path.name)
        if run.error is not None:
            raise SystemExit(f"{path.name}: {run.error.message}")
        out[label] = {k: time_run(run, s).profile.device_us for k, s in specs.items()}
    return out


def geomean(values: list[float]) -> float | None:
    vals = [v for v in values if v and v > 0 and math.isfinite(v)]
    return math.exp(sum(map(math.log, vals)) / len(vals)) if vals else None


def suite_geomeans(tasks: list[dict], keys: list[str]) -> dict[str, float | None]:
    """Per variant: the geomean over tasks of each task's geomean over its re-timed cases."""
    timed = [t for t in tasks if t["cases"] and not t["problem"]]
    return {k: geomean([geomean([c["speedup"][k] for c in t["cases"]]) for t in timed]) for k in keys}


def summarise(tasks: list[dict], mix: dict, specs: dict[str, HardwareSpec], args) -> dict:
    keys = list(specs)
    timed = [t for t in tasks if t["cases"] and not t["problem"]]
    # x1 must reproduce the stored run's case speedups (same kernels, inputs, preset): the check that
    # re-timing measures what the suite measured
    drift = [abs(c["speedup"][BASE] / c["stored_speedup"] - 1) for t in timed for c in t["cases"]
             if c["stored_speedup"]]
    ref_moved = {k: max((abs(c["reference_us"][k] / c["reference_us"][BASE] - 1) for t in timed for c in t["cases"]),
                        default=0.0) for k in keys}
    return {"run": str(args.run), "cases": args.cases, "tasks": len(tasks), "timed": len(timed),
            "problems": {t["task"]: t["problem"] for t in tasks if t["problem"]},
            "max_drift_vs_stored": max(drift, default=None), "geomean": suite_geomeans(tasks, keys),
            "reference_max_change": ref_moved, "mix_device_us": mix,
            "biggest_move": _biggest_moves(timed, keys), "per_task": tasks}


def _biggest_moves(timed: list[dict], keys: list[str]) -> dict[str, tuple[str, float]]:
    """Per variant, the task whose speedup moved most against x1 and by what factor."""
    out = {}
    for k in keys:
        if k == BASE:
            continue
        moves = [(t["task"], geomean([c["speedup"][k] / c["speedup"][BASE] for c in t["cases"]])) for t in timed]
        task, ratio = max(moves, key=lambda m: abs(math.log(m[1])), default=("-", 1.0))
        out[k] = (task, ratio)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path, nargs="?", help="a finished benchmarks/offline_suite.py run folder (or its mode folder)")
    parser.add_argument("--preset", default="ascend910b2")
    parser.add_argument("--cases", type=int, default=1, help="re-time the first N cases of each task (default 1)")
    parser.add_argument("--limit", type=int, default=None, help="only the first N correct tasks (a quick look)")
    parser.add_argument("--no-mix", action="store_true", help="skip the MIX examples")
    parser.add_argument("--json", action="store_true", help="print the JSON record instead of the table")
    parser.add_argument("--doc", type=Path, default=None, help="write the table between markers into this file")
    parser.add_argument("--render", type=Path, default=None,
                        help="no re-timing: the tables of a record an earlier --json run printed")
    args = parser.parse_args()
    if args.render:
        record = json.loads(args.render.read_text())
        text = markdown(record, args.preset)
        if args.doc:
            write_doc(args.doc, text)
        print(text)
        return 0
    start = time.perf_counter()
    specs = variants(load_preset(args.preset))
    rows = [r for r in final_rows(read_rows(results_file(args.run))) if r.status == "correct" and r.source]
    rows = sorted(rows, key=lambda r: r.task)[:args.limit]
    tasks = []
    for n, row in enumerate(rows, 1):
        tasks.append(task_times(row, specs, args.cases))
        print(f"[{n}/{len(rows)}] {row.task} {tasks[-1]['problem'] or ''}", file=sys.stderr, flush=True)
    mix = {} if args.no_mix else mix_times(specs)
    record = summarise(tasks, mix, specs, args)
    record["wall_s"] = round(time.perf_counter() - start, 1)
    text = markdown(record, args.preset)
    if args.doc:
        write_doc(args.doc, text)
    print(json.dumps(record, indent=1) if args.json else text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
