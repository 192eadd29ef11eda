"""Speed of the simulator: wall time and simulated instructions per second.

The headline workload is a 4096 x 4096 fp16 row softmax on 48 blocks
(examples/kernels/softmax.py); the example matmuls show a cube-heavy and an
instruction-heavy (vector-unit matmul) kernel. Each is run `--repeat` times in-process
(`run_kernel_source`, no sandbox) and the median wall and CPU times are reported: on a
shared machine the CPU time is the simulator's own cost, the wall time includes waiting.

    .venv/bin/python benchmarks/simulator_speed.py [--repeat 3] [--preset ascend910b2]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import numpy as np

from sage.npu.execute import run_kernel_source

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


def measure(kernel: str, args: list, repeat: int, preset: str) -> tuple[float, float, object]:
    source = (KERNELS / kernel).read_text()
    walls, cpus = [], []
    run = None
    for _ in range(repeat):
        started, cpu_started = time.perf_counter(), time.process_time()
        run = run_kernel_source(source, args, preset=preset, filename=kernel)
        walls.append(time.perf_counter() - started)
        cpus.append(time.process_time() - cpu_started)
        if run.error is not None:
            raise RuntimeError(f"{kernel}: {run.error}")
    return statistics.median(walls), statistics.median(cpus), run


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--preset", default="ascend910b2")
    args = parser.parse_args()
    print(f"{'workload':42} {'instructions':>12} {'wall s':>7} {'CPU s':>7} {'instr/CPU s':>11} "
          f"{'simulated us':>12}")
    for label, kernel, inputs in workloads():
        wall, cpu, run = measure(kernel, inputs, args.repeat, args.preset)
        p = run.profile
        print(f"{label:42} {p.instructions:>12,} {wall:>7.2f} {cpu:>7.2f} {p.instructions / cpu:>11,.0f} "
              f"{p.time_us:>12.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
