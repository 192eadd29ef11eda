"""Speed of the simulator: simulated instructions per CPU-second, split into functional run and replay.

The headline workload is a 4096 x 4096 fp16 row softmax on 48 blocks
(examples/kernels/softmax.py); the example matmuls show a cube-heavy and an
instruction-heavy (vector-unit matmul) kernel, and causal flash attention a MIX_AIC_1_2
launch whose AIC and AIVs hand tiles to each other through cross-core flags. Each is run `--repeat` times in-process (no
sandbox): the functional run (`run_functional`: the kernel's numpy work and its records)
and the replay (`time_run`: costing the records and scheduling them on the cores) are timed
apart, and the median of each is reported. CPU time is the simulator's own cost on a
shared machine; wall time includes waiting.

`--compare` also runs every block alone (`run_functional(..., lockstep=False)`: the
simulator without lane groups, sage/npu/sim/lanes.py), alternating with the default run in
each repeat so both see the same machine, and reports the ratio of their CPU times.

    .venv/bin/python benchmarks/simulator_speed.py [--repeat 3] [--compare] [--preset ascend910b2] [--json]

--json prints a list with one object per workload: name, instructions, cpu_s (functional +
replay), instructions_per_cpu_s, the split functional_cpu_s / replay_cpu_s, and with
--compare blocks_cpu_s (block by block, functional + replay) and lanes_speedup.
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
    qkv = [rng.standard_normal((1, 4, 1024, 128)).astype(np.float16) for _ in range(3)]
    return [
        ("softmax 4096x4096 fp16, 48 blocks", "softmax.py", [x]),
        ("cube matmul 1024^3 fp16, 24 blocks", "matmul.py", [a, b]),
        ("vector matmul 256^3 fp16, 43 blocks", "matmul_vector.py", [sa, sb]),
        ("flash attn 4x1024x128 fp16, mix 24", "flash_attention.py", qkv),
    ]


def once(source: str, kernel: str, args: list, spec, lockstep: bool) -> tuple[float, float, float, int, float]:
    """(wall s, functional CPU s, replay CPU s, instructions, simulated us) of one run.

    Only numbers come back: the run's outputs (tens of MB here) are freed before the next
    repeat starts, so each repeat allocates into memory the previous one released, as a long
    run does. Kept alive, they made every other repeat fault in fresh pages (0.2 s more on a
    4096 x 4096 softmax on this project's VM, whose page faults cost ~20 us each)."""
    started, cpu0 = time.perf_counter(), time.process_time()
    done = run_functional(source, args, spec=spec, filename=kernel, lockstep=lockstep)
    cpu1 = time.process_time()
    run = time_run(done, spec)
    cpu2 = time.process_time()
    if run.error is not None:
        raise RuntimeError(f"{kernel}: {run.error}")
    return time.perf_counter() - started, cpu1 - cpu0, cpu2 - cpu1, run.profile.instructions, run.profile.time_us


def measure(kernel: str, args: list, repeat: int, preset: str, compare: bool = False) -> dict:
    spec = load_preset(preset)
    source = (KERNELS / kernel).read_text()
    wall, functional, timing, blocks = [], [], [], []
    instructions = simulated = 0
    for _ in range(repeat):
        w, f, r, instructions, simulated = once(source, kernel, args, spec, True)
        wall.append(w)
        functional.append(f)
        timing.append(r)
        if compare:
            _, f0, r0, _, alone_us = once(source, kernel, args, spec, False)
            if alone_us != simulated:
                raise RuntimeError(f"{kernel}: block by block {alone_us} us, in lanes {simulated} us")
            blocks.append(f0 + r0)
    f, r = statistics.median(functional), statistics.median(timing)
    row = {"instructions": instructions, "cpu_s": round(f + r, 4),
           "instructions_per_cpu_s": round(instructions / (f + r)), "functional_cpu_s": round(f, 4),
           "replay_cpu_s": round(r, 4), "wall_s": round(statistics.median(wall), 4), "simulated_us": simulated}
    if compare:
        row["blocks_cpu_s"] = round(statistics.median(blocks), 4)
        row["lanes_speedup"] = round(row["blocks_cpu_s"] / row["cpu_s"], 2)
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--preset", default="ascend910b2")
    parser.add_argument("--compare", action="store_true", help="also run every block alone, alternating")
    parser.add_argument("--json", action="store_true", help="one JSON list instead of the table")
    args = parser.parse_args()
    rows = [{"name": label, **measure(kernel, inputs, args.repeat, args.preset, args.compare)}
            for label, kernel, inputs in workloads()]
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    # (80 columns: with --compare the block-by-block CPU and the gain replace the split)
    tail = f"{'alone s':>7} {'gain':>6}" if args.compare else f"{'func s':>6} {'replay':>6}"
    print(f"{'workload':34} {'instr':>7} {'CPU s':>6} {'instr/CPU-s':>11} {tail}")
    for r in rows:
        tail = (f"{r['blocks_cpu_s']:>7.2f} {r['lanes_speedup']:>5.2f}x" if args.compare else
                f"{r['functional_cpu_s']:>6.3f} {r['replay_cpu_s']:>6.3f}")
        print(f"{r['name']:34} {r['instructions']:>7,} {r['cpu_s']:>6.2f} {r['instructions_per_cpu_s']:>11,} {tail}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
