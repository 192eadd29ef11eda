"""Speed of the simulator: simulated instructions per CPU-second, split into functional run and replay.

The headline workload is a 4096 x 4096 fp16 row softmax on 48 blocks
(examples/kernels/softmax.py); the example matmuls show a cube-heavy and an
instruction-heavy (vector-unit matmul) kernel. Each is run `--repeat` times in-process (no
sandbox): the functional run (`run_functional`: the kernel's numpy work and its records)
and the replay (`time_run`: costing the records and scheduling them on the cores) are timed
apart, and the median of each is reported. CPU time is the simulator's own cost on a
shared machine; wall time includes waiting.

    .venv/bin/python benchmarks/simulator_speed.py [--repeat 3] [--preset ascend910b2] [--json]

--json prints a list with one object per workload: name, instructions, cpu_s (functional +
replay), instructions_per_cpu_s, and the split functional_cpu_s / replay_cpu_s.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import numpy as np

from sage.npu.execute import run_functional, time_run
from sage.npu.hardware import load_preset

KERNELS = Path(__file__).resolve().parents[1] / "examples" / "kernels"


def workloads() -> list[tuple[str, str, list]]:
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((4096, 4096), dtype=np.float32) * 4).astype(np.float16)
    a = rng.standard_normal((1024, 1024)).astype(np.float16)
    b = rng.standard_normal((1024, 1024)).astype(np.float16)
    sa = rng.standard_normal((256, 256)).astype(np.float16)
    sb = rng.standard_normal((256, 256)).astype(np.float16)
    return [
        ("softmax 4096x4096 fp16, 48 blocks", "softmax.py", [x]),
        ("cube matmul 1024^3 fp16, 24 blocks", "matmul.py", [a, b]),
        ("vector-unit matmul 256^3 fp16, 43 blocks", "matmul_vector.py", [sa, sb]),
    ]


def measure(kernel: str, args: list, repeat: int, preset: str) -> dict:
    spec = load_preset(preset)
    source = (KERNELS / kernel).read_text()
    wall, functional, timing = [], [], []
    run = None
    for _ in range(repeat):
        started, cpu0 = time.perf_counter(), time.process_time()
        done = run_functional(source, args, spec=spec, filename=kernel)
        cpu1 = time.process_time()
        run = time_run(done, spec)
        cpu2 = time.process_time()
        wall.append(time.perf_counter() - started)
        functional.append(cpu1 - cpu0)
        timing.append(cpu2 - cpu1)
        if run.error is not None:
            raise RuntimeError(f"{kernel}: {run.error}")
    f, r = statistics.median(functional), statistics.median(timing)
    return {"instructions": run.profile.instructions, "cpu_s": round(f + r, 4),
            "instructions_per_cpu_s": round(run.profile.instructions / (f + r)), "functional_cpu_s": round(f, 4),
            "replay_cpu_s": round(r, 4), "wall_s": round(statistics.median(wall), 4),
            "simulated_us": run.profile.time_us}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--preset", default="ascend910b2")
    parser.add_argument("--json", action="store_true", help="one JSON list instead of the table")
    args = parser.parse_args()
    rows = [{"name": label, **measure(kernel, inputs, args.repeat, args.preset)} for label, kernel, inputs in workloads()]
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    print(f"{'workload':42} {'instructions':>12} {'wall s':>7} {'CPU s':>7} {'instr/CPU s':>11} "
          f"{'functional':>10} {'replay':>7} {'simulated us':>12}")
    for r in rows:
        print(f"{r['name']:42} {r['instructions']:>12,} {r['wall_s']:>7.2f} {r['cpu_s']:>7.2f} "
              f"{r['instructions_per_cpu_s']:>11,} {r['functional_cpu_s']:>10.3f} {r['replay_cpu_s']:>7.3f} "
              f"{r['simulated_us']:>12.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
