"""What the sandbox costs: the same kernels run isolated and in-process, and `sage npu run` before/after.

Two measurements (docs/security.md, README "Performance"):

1. **Isolation alone, this tree.** For each example kernel (examples/kernels/*.py with its
   task) and each case, the kernel runs through `run_sandboxed` (a child forked from the
   zygote, locked down, its records sent back and replayed here) and through
   `run_kernel_source` (the same functional run and replay in this process). Runs alternate,
   `--repeat` times each; the ratio of the summed medians is the cost of isolation.
2. **`sage npu run`, before and after** (`--baseline DIR`): the wall time of the CLI on each
   example in a checkout of an earlier commit (with its own `.venv`) and in this tree,
   alternating, `--repeat` times. That includes everything that changed between the two
   commits, not only the sandbox.

    .venv/bin/python benchmarks/isolation_cost.py [--repeat 3] [--baseline /tmp/sage-before] [--json]

Make a baseline with: git worktree add /tmp/sage-before <commit> && make -C /tmp/sage-before install
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "kernels"
PAIRS = [(k, t) for k, t in (("add.py", "add_task.py"), ("softmax.py", "softmax_task.py"),
                             ("layernorm.py", "layernorm_task.py"), ("matmul.py", "matmul_task.py"),
                             ("matmul_bias_gelu_mix.py", "matmul_bias_gelu_task.py"))
         if (EXAMPLES / k).is_file()]


def _task(name: str):
    spec = importlib.util.spec_from_file_location(f"iso_task_{Path(name).stem}", EXAMPLES / name)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def isolation_alone(repeat: int) -> list[dict]:
    from sage.npu.execute import run_kernel_source
    from sage.npu.sandbox import Limits, run_sandboxed

    rows = []
    limits = Limits(wall_seconds=600)
    for kernel, task_file in PAIRS:
        source = (EXAMPLES / kernel).read_text()
        task = _task(task_file)
        inside, isolated = [], []
        for case in task.get_input_groups():
            args = [a.numpy() for a in case]
            run_sandboxed(source, args, filename=kernel, limits=limits)  # warm the zygote and caches
            t_in, t_iso = [], []
            for _ in range(repeat):
                t = time.perf_counter()
                a = run_kernel_source(source, args, filename=kernel)
                t_in.append(time.perf_counter() - t)
                t = time.perf_counter()
                b = run_sandboxed(source, args, filename=kernel, limits=limits)
                t_iso.append(time.perf_counter() - t)
                if a.error is not None or b.error is not None:
                    raise RuntimeError(f"{kernel}: {a.error or b.error}")
            inside.append(statistics.median(t_in))
            isolated.append(statistics.median(t_iso))
        rows.append({"kernel": kernel, "cases": len(inside), "in_process_s": round(sum(inside), 3),
                     "sandboxed_s": round(sum(isolated), 3), "ratio": round(sum(isolated) / sum(inside), 3)})
    return rows


def cli_before_after(baseline: Path, repeat: int) -> list[dict]:
    rows = []
    for kernel, task_file in PAIRS:
        if not (baseline / "examples" / "kernels" / kernel).is_file():
            continue  # an example the earlier commit does not have
        times: dict[str, list[float]] = {"before": [], "after": []}
        for _ in range(repeat):
            for label, tree in (("before", baseline), ("after", ROOT)):
                cmd = [str(tree / ".venv" / "bin" / "sage"), "npu", "run", str(EXAMPLES / kernel),
                       "--task", str(EXAMPLES / task_file), "--json"]
                t = time.perf_counter()
                proc = subprocess.run(cmd, capture_output=True, text=True, cwd=tree)
                times[label].append(time.perf_counter() - t)
                if proc.returncode not in (0, 1):
                    raise RuntimeError(f"{label} {kernel}: rc {proc.returncode}: {proc.stderr[-500:]}")
        before, after = statistics.median(times["before"]), statistics.median(times["after"])
        rows.append({"kernel": kernel, "before_s": round(before, 2), "after_s": round(after, 2),
                     "ratio": round(after / before, 3)})
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--baseline", type=Path, default=None, help="a checkout of an earlier commit, with .venv")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = {"isolation": isolation_alone(args.repeat)}
    iso = result["isolation"]
    result["isolation_total_ratio"] = round(sum(r["sandboxed_s"] for r in iso) / sum(r["in_process_s"] for r in iso), 3)
    if args.baseline is not None:
        cli = cli_before_after(args.baseline, args.repeat)
        result["cli"] = cli
        result["cli_total_ratio"] = round(sum(r["after_s"] for r in cli) / sum(r["before_s"] for r in cli), 3)
    if args.json:
        print(json.dumps(result))
        return 0
    print(f"{'kernel':28} {'cases':>5} {'in-process s':>12} {'sandboxed s':>11} {'ratio':>6}")
    for r in iso:
        print(f"{r['kernel']:28} {r['cases']:>5} {r['in_process_s']:>12.3f} {r['sandboxed_s']:>11.3f} {r['ratio']:>6.2f}")
    print(f"isolation alone, all examples: {result['isolation_total_ratio']:.2f}x")
    if "cli" in result:
        print(f"\n{'sage npu run':28} {'before s':>8} {'after s':>8} {'ratio':>6}")
        for r in result["cli"]:
            print(f"{r['kernel']:28} {r['before_s']:>8.2f} {r['after_s']:>8.2f} {r['ratio']:>6.2f}")
        print(f"sage npu run, all examples: {result['cli_total_ratio']:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
