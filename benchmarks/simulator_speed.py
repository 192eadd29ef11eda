"""Speed of the simulator: simulated instructions per CPU-second, split into functional run and replay.

The workloads are the kernels the suite and the agent simulate over and over: a 4096 x 4096
fp16 row softmax on 48 blocks (examples/kernels/softmax.py, the headline), the cube matmul
and the vector-unit matmul examples, a 4 M-element add, the layer norm example, a kernel
that branches on each row's maximum (benchmarks/kernels/row_clip.py: a data-dependent
branch, run under lane masks), the MIX matmul with its GELU epilogue, and a causal flash-attention forward
(examples/kernels/flash_attention.py, when the checkout has it). Each is run `--repeat`
times and the median CPU time of the functional run (`run_functional`: the kernel's numpy
work and its records) and of the replay (`time_run`: costing and scheduling the records) is
reported. CPU time is the simulator's own cost on a shared machine; wall time includes waiting.

`--compare` also runs every block alone (`run_functional(..., lockstep=False)`: the
simulator without lane groups), alternating with the default run in each repeat, and
reports the ratio of their CPU times.

`--baseline REV` runs the same workloads, on the same inputs and kernel files (this
checkout's), with the simulator of commit REV (`git archive` into a temporary folder), each
repeat in a fresh process per version (warmed up by a small add first, as the sandbox's
zygote is warm when it forks a child), the two versions alternating so both see the same
machine; it reports each version's median CPU and old / new. A version without
`run_functional` (before the functional run and the replay were split) is timed whole
through `run_kernel_source`. A workload the older simulator cannot run says why.

`--blocks` runs every block alone (`lockstep=False`) in every timed run: the plain table, or
both sides of `--baseline` (a version that has no `lockstep` switch has no lane groups either:
its runs are block by block already). It measures the path a lane group falls back to.

    .venv/bin/python benchmarks/simulator_speed.py [--repeat 3] [--compare] [--baseline REV] [--blocks]
                                                  [--only NAME,...] [--preset ascend910b2] [--json]
                                                  [--doc docs/performance.md]

--json prints a list with one object per workload: name, instructions, cpu_s (functional +
replay), instructions_per_cpu_s, the split functional_cpu_s / replay_cpu_s, and with
--compare blocks_cpu_s and lanes_speedup; with --baseline, baseline_cpu_s, speedup (baseline
CPU / this checkout's) and baseline_error where the older simulator failed.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from benchmarks.provenance import run_line  # noqa: E402
from benchmarks.suite_summary import place_block  # noqa: E402

KERNELS = ROOT / "examples" / "kernels"
BENCH_KERNELS = ROOT / "benchmarks" / "kernels"


def _flash_inputs(rng) -> list:
    return [(rng.standard_normal((1, 4, 1024, 128)) * 0.5).astype(np.float16) for _ in range(3)]


def workloads() -> list[tuple[str, Path, list]]:
    """(label, kernel file, inputs): seeded, so every run and version sees the same data."""
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((4096, 4096), dtype=np.float32) * 4).astype(np.float16)
    a = rng.standard_normal((1024, 1024)).astype(np.float16)
    b = rng.standard_normal((1024, 1024)).astype(np.float16)
    sa = rng.standard_normal((256, 256)).astype(np.float16)
    sb = rng.standard_normal((256, 256)).astype(np.float16)
    add = [rng.standard_normal(1 << 22).astype(np.float16) for _ in range(2)]
    ln = [(rng.standard_normal((4096, 1024)) * 2 + 0.5).astype(np.float32),
          (1 + 0.1 * rng.standard_normal(1024)).astype(np.float32), (0.1 * rng.standard_normal(1024)).astype(np.float32)]
    clip = (rng.standard_normal((4096, 512)) * 0.345).astype(np.float32)   # about half the rows pass 1.0
    mix = [(rng.standard_normal((1024, 512)) * 0.5).astype(np.float16),
           (rng.standard_normal((512, 256)) * 0.5).astype(np.float16), rng.standard_normal(256).astype(np.float16)]
    rows = [
        ("softmax 4096x4096 fp16, 48 blocks", KERNELS / "softmax.py", [x]),
        ("cube matmul 1024^3 fp16, 24 blocks", KERNELS / "matmul.py", [a, b]),
        ("vector matmul 256^3 fp16, 43 blocks", KERNELS / "matmul_vector.py", [sa, sb]),
        ("add 4M fp16", KERNELS / "add.py", add),
        ("layer norm 4096x1024 fp32", KERNELS / "layernorm.py", ln),
        ("row clip on each row's max, 4096x512", BENCH_KERNELS / "row_clip.py", [clip]),
        ("MIX matmul+bias+GELU 1024x512x256", KERNELS / "matmul_bias_gelu_mix.py", mix),
    ]
    if (KERNELS / "flash_attention.py").exists():
        rows.append(("flash attention fwd 1x4x1024x128", KERNELS / "flash_attention.py", _flash_inputs(rng)))
    return rows


# The child that times one workload once with the simulator found on its sys.path (this
# checkout's or a baseline's): only numbers come back, on its last line of stdout.
CHILD = r"""
import json, sys, time
import numpy as np
import sage.npu.execute as ex
from sage.npu.hardware import load_preset

source = open(sys.argv[1]).read()
data = np.load(sys.argv[2])
args = [data[f"a{i}"] for i in range(len(data.files))]
spec = load_preset(sys.argv[3])
lockstep = sys.argv[4] == "1"
name = sys.argv[1].rsplit("/", 1)[-1]
# Warm the process up first, as the sandbox's zygote is warm when it forks a child: a small add
# (this checkout's example) pays the first calls of numpy, the compiler and the DSL.
warm = np.ones(1 << 16, np.float16)
ex.run_kernel_source(open(sys.argv[5]).read(), [warm, warm], preset=spec, filename="add.py")
if hasattr(ex, "run_functional"):
    import inspect
    has_switch = "lockstep" in inspect.signature(ex.run_functional).parameters
    if not lockstep and not has_switch:
        import importlib.util
        # a simulator with lane groups but no switch could not run block by block: say so, not time lanes
        assert importlib.util.find_spec("sage.npu.sim.lanes") is None, "no lockstep switch to run block by block"
    kw = {"lockstep": False} if not lockstep and has_switch else {}
    t0 = time.process_time()
    done = ex.run_functional(source, args, spec=spec, filename=name, **kw)
    t1 = time.process_time()
    run = ex.time_run(done, spec)
    t2 = time.process_time()
    functional, replay = t1 - t0, t2 - t1
else:
    t0 = time.process_time()
    run = ex.run_kernel_source(source, args, preset=spec, filename=name)
    functional, replay = time.process_time() - t0, 0.0
error = None if run.error is None else f"{run.error.type}: {run.error.message}"[:300]
prof = run.profile
print(json.dumps({"functional": functional, "replay": replay, "error": error,
                  "instructions": prof.instructions if prof else 0, "time_us": prof.time_us if prof else None}))
"""


def once_in(tree: Path, kernel: Path, inputs: Path, preset: str, lockstep: bool = True) -> dict:
    """One timed run in a fresh process with the simulator of `tree`."""
    done = subprocess.run([sys.executable, "-c", CHILD, str(kernel), str(inputs), preset, "1" if lockstep else "0",
                           str(KERNELS / "add.py")],
                          cwd=tree, env={"PYTHONPATH": str(tree), "OPENBLAS_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"},
                          capture_output=True, text=True)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        return {"error": f"the run failed: {last[:300]}"}
    return json.loads(done.stdout.strip().splitlines()[-1])


def once(source: str, name: str, args: list, spec, lockstep: bool) -> tuple[float, float, int, float]:
    """(functional CPU s, replay CPU s, instructions, simulated us) of one run in this process.

    Only numbers come back: the run's outputs (tens of MB here) are freed before the next
    repeat starts, so each repeat allocates into memory the previous one released, as a long
    run does. Kept alive, they made every other repeat fault in fresh pages (0.2 s more on a
    4096 x 4096 softmax on this project's VM, whose page faults cost ~20 us each)."""
    from sage.npu.execute import run_functional, time_run

    cpu0 = time.process_time()
    done = run_functional(source, args, spec=spec, filename=name, lockstep=lockstep)
    cpu1 = time.process_time()
    run = time_run(done, spec)
    cpu2 = time.process_time()
    if run.error is not None:
        raise RuntimeError(f"{name}: {run.error}")
    return cpu1 - cpu0, cpu2 - cpu1, run.profile.instructions, run.profile.time_us


def measure(kernel: Path, args: list, repeat: int, preset: str, compare: bool = False, lockstep: bool = True) -> dict:
    from sage.npu.hardware import load_preset

    spec = load_preset(preset)
    source = kernel.read_text()
    functional, timing, blocks = [], [], []
    instructions = simulated = 0
    for _ in range(repeat):
        f, r, instructions, simulated = once(source, kernel.name, args, spec, lockstep)
        functional.append(f)
        timing.append(r)
        if compare:
            f0, r0, _, alone_us = once(source, kernel.name, args, spec, False)
            if alone_us != simulated:
                raise RuntimeError(f"{kernel.name}: block by block {alone_us} us, in lanes {simulated} us")
            blocks.append(f0 + r0)
    f, r = statistics.median(functional), statistics.median(timing)
    row = {"instructions": instructions, "cpu_s": round(f + r, 4),
           "instructions_per_cpu_s": round(instructions / (f + r)), "functional_cpu_s": round(f, 4),
           "replay_cpu_s": round(r, 4), "simulated_us": simulated}
    if compare:
        row["blocks_cpu_s"] = round(statistics.median(blocks), 4)
        row["lanes_speedup"] = round(row["blocks_cpu_s"] / row["cpu_s"], 2)
    return row


def measure_against(kernel: Path, args: list, repeat: int, preset: str, baseline: Path, work: Path,
                    lockstep: bool = True) -> dict:
    """This checkout and `baseline`, each repeat in fresh processes, alternating (`lockstep=False`:
    both block by block)."""
    inputs = work / f"{kernel.stem}.npz"
    np.savez(inputs, **{f"a{i}": a for i, a in enumerate(args)})
    runs: dict[str, list[dict]] = {"new": [], "old": []}
    for _ in range(repeat):
        runs["new"].append(once_in(ROOT, kernel, inputs, preset, lockstep))
        runs["old"].append(once_in(baseline, kernel, inputs, preset, lockstep))
    new = [r for r in runs["new"] if not r.get("error")]
    if len(new) < len(runs["new"]):
        raise RuntimeError(f"{kernel.name}: {next(r['error'] for r in runs['new'] if r.get('error'))}")
    f = statistics.median(r["functional"] for r in new)
    r_ = statistics.median(r["replay"] for r in new)
    row = {"instructions": new[0]["instructions"], "cpu_s": round(f + r_, 4),
           "instructions_per_cpu_s": round(new[0]["instructions"] / (f + r_)), "functional_cpu_s": round(f, 4),
           "replay_cpu_s": round(r_, 4), "simulated_us": new[0]["time_us"]}
    failed = [r["error"] for r in runs["old"] if r.get("error")]
    if failed:
        row["baseline_error"] = failed[0]
    else:
        old = statistics.median(r["functional"] + r["replay"] for r in runs["old"])
        row["baseline_cpu_s"] = round(old, 4)
        row["speedup"] = round(old / row["cpu_s"], 2)
    return row


def archive(rev: str, into: Path) -> Path:
    """The tree of commit `rev` extracted into `into` (its sage package and configs)."""
    into.mkdir(parents=True, exist_ok=True)
    tar = subprocess.run(["git", "archive", rev], cwd=ROOT, capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=tar, check=True)
    return into


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--preset", default="ascend910b2")
    parser.add_argument("--compare", action="store_true", help="also run every block alone, alternating")
    parser.add_argument("--baseline", metavar="REV", help="also run the simulator of commit REV, alternating")
    parser.add_argument("--blocks", action="store_true",
                        help="every timed run block by block (lockstep=False), with --baseline on both sides")
    parser.add_argument("--only", help="comma-separated words: the workloads whose name contains one of them")
    parser.add_argument("--json", action="store_true", help="one JSON list instead of the table")
    parser.add_argument("--doc", type=Path, metavar="PATH",
                        help="also write the table into PATH between its markers (docs/performance.md)")
    args = parser.parse_args()
    if args.blocks and args.compare:
        parser.error("--blocks and --compare: --compare already times block by block against lanes")
    chosen = [w for w in workloads() if not args.only or any(k in w[0] for k in args.only.split(","))]
    rows = []
    with tempfile.TemporaryDirectory(prefix="simspeed-") as tmp:
        base = archive(args.baseline, Path(tmp) / "baseline") if args.baseline else None
        for label, kernel, inputs in chosen:
            if not args.json:
                print(f"\r{label[:60]:60}", end="", file=sys.stderr, flush=True)
            row = (measure_against(kernel, inputs, args.repeat, args.preset, base, Path(tmp), not args.blocks) if base
                   else measure(kernel, inputs, args.repeat, args.preset, args.compare, not args.blocks))
            rows.append({"name": label, **row})
    if args.doc is not None:
        kind = f"simulator_speed vs {args.baseline}{' --blocks' if args.blocks else ''}" if args.baseline else \
            "simulator_speed --compare" if args.compare else "simulator_speed --blocks" if args.blocks else "simulator_speed"
        place_block(args.doc, markdown(rows, args), f"<!-- {kind} -->", f"<!-- /{kind} -->")
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    print(file=sys.stderr)
    print_table(rows, args)
    return 0


def markdown(rows: list[dict], args) -> str:
    """The table as a generated doc block, with the command and the run it came from."""
    command = " ".join(["benchmarks/simulator_speed.py", f"--repeat {args.repeat}"]
                       + (["--compare"] if args.compare else []) + ([f"--baseline {args.baseline}"] if args.baseline else [])
                       + (["--blocks"] if args.blocks else [])
                       + ([f"--only {args.only}"] if args.only else []) + [f"--doc {args.doc}"])
    head = ["workload", "instructions", "CPU s", "instructions / CPU-s", "functional s", "replay s"]
    if args.baseline:
        head += [f"CPU s at {args.baseline}", f"{args.baseline} / this"]
    elif args.compare:
        head += ["block by block s", "lanes' gain"]
    lines = [run_line(command), "", "| " + " | ".join(head) + " |", "|---" + "|---:" * (len(head) - 1) + "|"]
    for r in rows:
        cells = [r["name"], f"{r['instructions']:,}", f"{r['cpu_s']:.3f}", f"{r['instructions_per_cpu_s']:,}",
                 f"{r['functional_cpu_s']:.3f}", f"{r['replay_cpu_s']:.3f}"]
        if args.baseline:
            cells += ([f"{r['baseline_cpu_s']:.3f}", f"{r['speedup']:.2f}x"] if "speedup" in r else
                      ["fails", "-"])
        elif args.compare:
            cells += [f"{r['blocks_cpu_s']:.3f}", f"{r['lanes_speedup']:.2f}x"]
        lines.append("| " + " | ".join(cells) + " |")
    for r in rows:
        if "baseline_error" in r:
            lines.append(f"\n{r['name']}: at {args.baseline} the run fails: {r['baseline_error'][:160]}")
    return "\n".join(lines)


def print_table(rows: list[dict], args) -> None:
    # (80 columns: with --compare or --baseline the other CPU and the ratio replace the split)
    if args.baseline:
        tail = f"{args.baseline[:7]:>7} {'old/new':>7}"
    else:
        tail = f"{'alone s':>7} {'gain':>6}" if args.compare else f"{'func s':>6} {'replay':>6}"
    print(f"{'workload':36} {'instr':>7} {'CPU s':>6} {'instr/CPU-s':>11} {tail}")
    for r in rows:
        if args.baseline:
            tail = (f"{r['baseline_cpu_s']:>7.2f} {r['speedup']:>6.2f}x" if "speedup" in r else f"{'fails':>7} {'-':>7}")
        elif args.compare:
            tail = f"{r['blocks_cpu_s']:>7.2f} {r['lanes_speedup']:>5.2f}x"
        else:
            tail = f"{r['functional_cpu_s']:>6.3f} {r['replay_cpu_s']:>6.3f}"
        print(f"{r['name'][:36]:36} {r['instructions']:>7,} {r['cpu_s']:>6.2f} {r['instructions_per_cpu_s']:>11,} {tail}")
    for r in rows:
        if "baseline_error" in r:
            print(f"{r['name']}: at {args.baseline} {r['baseline_error']}"[:200])


if __name__ == "__main__":
    raise SystemExit(main())
