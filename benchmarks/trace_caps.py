"""The caps of sim/caps.py against what they bound: honest runs below, the parent's memory at them.

Three measurements:

1. **Honest runs** (benchmarks/honest_kernels.py: the examples, the library's and the offline
   agent's kernels, every case): per run its records (the largest launch and the run),
   distinct records as the wire and the parent hold them (`opcodes.replay_key`), block streams,
   launches, GM allocations, dependencies per record and trace bytes, measured with the caps
   lifted so that a run over one still shows its size. Each cap must sit well above the
   largest.
2. **The parent at the caps**: the largest trace the caps allow, shaped to cost the parent
   most (every block its own stream, every distinct record a GM copy or a flag waiting for
   `MAX_DEPS_PER_RECORD` others, with fields too large for Python's small-int cache), plus
   every block and launch the caps allow, decoded and replayed in a fresh process as
   `sandbox._parse` and `execute.time_run` do: its RSS growth must stay under 300 MB.
3. **Time to the cap**: a sandboxed kernel that floods each cap the fastest way (lane groups
   make 48 records per DSL call), and a million `empty()` calls: seconds until the
   `KernelResourceError` (10 s at most, the issue's target).

    .venv/bin/python benchmarks/trace_caps.py [--cases N] [--no-honest] [--json] [--doc docs/security.md]

--doc rewrites the block between the trace-caps markers of the file (appended when it has none).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.suite_summary import place_block  # noqa: E402
from sage.npu.sim import caps  # noqa: E402

BEGIN, END = "<!-- trace-caps:begin -->", "<!-- trace-caps:end -->"
PARENT_LIMIT_MB = 300
TRIP_LIMIT_S = 10.0
FIELDS = ("max_launch", "records", "distinct", "blocks", "launches", "allocations", "max_deps", "bytes")
CAP_OF = {"max_launch": "MAX_RECORDS_PER_LAUNCH", "records": "MAX_RECORDS", "distinct": "MAX_DISTINCT_RECORDS",
          "blocks": "MAX_BLOCKS", "launches": "MAX_LAUNCHES", "allocations": "MAX_ALLOCATIONS"}
WIRE_CAPS = {"max_deps": "MAX_DEPS_PER_RECORD", "bytes": "MAX_TRACE_BYTES"}   # of sim/runtrace.py
LABELS = {"max_launch": "records in a launch", "records": "records in a run", "distinct": "distinct records",
          "blocks": "block streams", "launches": "launches", "allocations": "GM allocations",
          "max_deps": "dependencies of a record", "bytes": "trace bytes"}


# -- 1. honest runs ---------------------------------------------------------------------------

def honest_sizes(cases: int | None) -> list[dict]:
    """Per honest run its sizes (caps lifted in this process, so nothing is cut short)."""
    from benchmarks.honest_kernels import honest_runs
    from sage.npu.execute import run_functional
    from sage.npu.hardware import load_preset
    from sage.npu.sim.opcodes import replay_key
    from sage.npu.sim.runtrace import encode

    for name in CAP_OF.values():
        setattr(caps, name, 1 << 40)
    spec = load_preset("ascend910b2")
    rows = []
    for run in honest_runs(cases=cases):
        start = time.process_time()
        done = run_functional(run.kernel, run.args, run.kwargs, spec=spec)
        row = {"source": run.source, "run": run.label, "cpu_s": round(time.process_time() - start, 2)}
        if done.error is not None:
            row["error"] = done.error.type
        else:
            trace = done.trace
            recs = [r for lt in trace.launches for b in lt.blocks for r in b.records]
            row.update(max_launch=max((sum(len(b.records) for b in lt.blocks) for lt in trace.launches), default=0),
                       records=len(recs), distinct=len(set(map(replay_key, recs))),
                       blocks=sum(len(lt.blocks) for lt in trace.launches), launches=len(trace.launches),
                       allocations=len(trace.allocations), max_deps=max((len(r[10]) for r in recs if r[10]), default=0),
                       bytes=len(encode(trace)))
        rows.append(row)
    return rows


def largest(rows: list[dict]) -> dict[str, dict]:
    ok = [r for r in rows if "error" not in r]
    return {f: max(ok, key=lambda r: r[f]) for f in FIELDS}


# -- 2. the parent at the caps ------------------------------------------------------------------

def worst_trace() -> bytes:
    """The largest trace the caps allow, shaped to cost the replaying parent most."""
    from sage.npu.sim.opcodes import FLAG, GM_COPY, NORMAL, PATH_INDEX, SYNC, VEC
    from sage.npu.sim.runtrace import MAX_DEPS_PER_RECORD, BlockTrace, LaunchTrace, RunTrace, encode

    deps = MAX_DEPS_PER_RECORD
    k = 0

    def distinct(i: int) -> tuple:
        nonlocal k
        k += 1
        if k % 2:   # a flag waiting for the records before it
            return (1, SYNC, FLAG, 0, 0, 0, 0, -1, 0, 0, tuple(range(i - deps, i)), "WaitFlag", 100_000 + k)
        n = 4096 + k   # a GM read of its own size and place (each its own L2 interval and cost)
        return (4, NORMAL, GM_COPY, PATH_INDEX["GM->UB"], n, 1, n, 0, 10**9 + k * 8192, 10**9 + k * 8192 + n,
                None, "DataCopy", 100_000 + k)

    filler = (1, NORMAL, VEC, 0, 4, 3, 0, -1, 0, 0, None, "Add", 9)

    def launch(records: int, rows: int, blocks: int) -> LaunchTrace:
        out = []
        for b in range(blocks):
            recs = [(1, NORMAL, VEC, 0, 4, 1, b, -1, 0, 0, None, "Add", 7)] + [filler] * (deps - 1)  # its own stream
            recs += [distinct(i) for i in range(deps, deps + rows // blocks)]
            recs += [filler] * (records // blocks - len(recs))
            out.append(BlockTrace(recs, block=b))
        return LaunchTrace("flood", blocks, out)

    # The largest launch: its records over every block the caps leave (each its own stream) and
    # half the distinct records; the run's other records over 48 blocks with the other half; every
    # launch left one block of one record.
    small = caps.MAX_LAUNCHES - 2
    wide = caps.MAX_BLOCKS - 48 - small
    rows = caps.MAX_DISTINCT_RECORDS - wide - 48 - 2     # (each stream's own record, and the filler)
    launches = [launch(caps.MAX_RECORDS_PER_LAUNCH, rows // 2, wide),
                launch(caps.MAX_RECORDS - caps.MAX_RECORDS_PER_LAUNCH - small, rows // 2, 48)]
    launches += [LaunchTrace("flood", 1, [BlockTrace([filler])]) for _ in range(small)]
    return encode(RunTrace([(1 << 40, True)], launches))


PARENT = """
import sys, time
import numpy as np
from sage.npu.execute import FunctionalRun, time_run
from sage.npu.hardware import load_preset
from sage.npu.sim.runtrace import decode
spec = load_preset("ascend910b2")
def status(key):   # kB; VmHWM is this process's peak RSS (ru_maxrss would include its parent's before exec)
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith(key + ":"))
base, start = status("VmRSS"), time.monotonic()
with open(sys.argv[1], "rb") as f:
    data = bytearray(f.read())
trace = decode(data)        # as sandbox._parse: the bytes are read, decoded, then dropped
del data
run = time_run(FunctionalRun([np.zeros(1, np.float32)], trace, None), spec)
assert run.error is None, run.error
print((status("VmHWM") - base) / 2**20, time.monotonic() - start)
"""


def parent_growth(trace: bytes) -> tuple[float, float]:
    """(peak RSS growth in MB, seconds) of a fresh process decoding and replaying `trace`."""
    with tempfile.NamedTemporaryFile(suffix=".trace") as f:
        f.write(trace)
        f.flush()
        out = subprocess.run([sys.executable, "-c", PARENT, f.name], capture_output=True, text=True,
                             env={**os.environ, "PYTHONPATH": str(ROOT)})
    if out.returncode:
        raise RuntimeError(f"the replaying process failed: {out.stderr[-2000:]}")
    mb, seconds = out.stdout.split()
    return float(mb), float(seconds)


# -- 3. time to the cap -------------------------------------------------------------------------

FLOODS = {
    # 48 lanes, one Duplicate per lane a call: the fastest way to make records
    "records per launch": ("flood[48](x, {n})", caps.MAX_RECORDS_PER_LAUNCH // 48 + 10, "Duplicate(t, 1.0, 64)"),
    "records per run": ("for j in range(16):\n        flood[48](x, {n})", caps.MAX_RECORDS // 16 // 48 + 10,
                        "Duplicate(t, 1.0, 64)"),
    # every lane's copy of every iteration reads its own GM bytes: a distinct record each
    "distinct records": ("flood[48](x, {n})", caps.MAX_DISTINCT_RECORDS // 48 + 10,
                         "DataCopy(t, xg[(i * 48 + GetBlockIdx()) * 8 % 4_000_000], 64)"),
    "blocks": ("for j in range({n}):\n        flood[48](x, 1)", caps.MAX_BLOCKS // 48 + 1, "Duplicate(t, 1.0, 64)"),
    "launches": ("for j in range({n}):\n        flood[1](x, 1)", caps.MAX_LAUNCHES + 1, "Duplicate(t, 1.0, 64)"),
    "GM allocations": ("for j in range({n}):\n        empty([8], float32)", 1_000_000, "Duplicate(t, 1.0, 64)"),
}
FLOOD = """from sage.npu.ascendc import *

@kernel
def flood(x, n):
    xg = GlobalTensor()
    xg.SetGlobalBuffer(x)
    pipe = TPipe()
    buf = TBuf(TPosition.VECCALC)
    pipe.InitBuffer(buf, 256)
    t = buf.Get(float32)
    for i in range(n):
        {body}

def forward(x):
    {host}
    return empty_like(x)
"""


def flood_kernel(name: str) -> str:
    host, n, body = FLOODS[name]
    return FLOOD.format(host=host.format(n=n), body=body)


def trip_seconds(name: str) -> tuple[float, str | None, str]:
    """(wall seconds, error type, message) of the flood over one cap, sandboxed."""
    import numpy as np

    from sage.npu.sandbox import run_sandboxed

    start = time.monotonic()
    run = run_sandboxed(flood_kernel(name), [np.zeros(1 << 22, np.float32)])
    return time.monotonic() - start, run.error and run.error.type, run.error.message if run.error else ""


# -- the report ---------------------------------------------------------------------------------

def measure(cases: int | None, honest: bool) -> dict:
    from sage.npu.sim import runtrace

    out: dict = {"caps": {name: getattr(caps, name) for name in CAP_OF.values()}
                 | {name: getattr(runtrace, name) for name in WIRE_CAPS.values()}}
    if honest:
        rows = honest_sizes(cases)
        out["cases"] = cases
        out["runs"] = len(rows)
        out["errors"] = [r for r in rows if "error" in r]
        out["largest"] = {f: {"run": r["run"], "source": r["source"], "value": r[f]} for f, r in largest(rows).items()}
        from importlib import reload

        reload(caps)   # (the caps were lifted for the honest runs)
    trace = worst_trace()
    mb, seconds = parent_growth(trace)
    out["parent"] = {"trace_bytes": len(trace), "growth_mb": round(mb, 1), "seconds": round(seconds, 1)}
    out["trips"] = {}
    for name in FLOODS:
        seconds, error, message = trip_seconds(name)
        out["trips"][name] = {"seconds": round(seconds, 1), "error": error, "message": message}
    return out


def markdown(result: dict) -> str:
    lines = []
    if "largest" in result:
        cases = "every case" if result["cases"] is None else f"the first {result['cases']} case(s)"
        lines += [f"Honest runs ({result['runs']}: the examples, the library's and the offline agent's kernels, "
                  f"{cases} of each task), the largest of each size against its cap:", "",
                  "| size | largest honest | run | cap | cap / largest |", "|---|---|---|---|---|"]
        for f in FIELDS:
            big = result["largest"][f]
            cap = result["caps"].get(CAP_OF.get(f) or WIRE_CAPS.get(f, ""), None)
            ratio = f"{cap / big['value']:.1f}x" if cap and big["value"] else "-"
            lines.append(f"| {LABELS[f]} | {big['value']:,} | {big['source']} {big['run']} | "
                         f"{'-' if cap is None else f'{cap:,}'} | {ratio} |")
        lines.append("")
    p = result["parent"]
    lines.append(f"The parent replaying the largest trace the caps allow ({p['trace_bytes'] / 2**20:.0f} MB, every "
                 f"cap at once, shaped to cost it most) grows by **{p['growth_mb']:.0f} MB** (limit "
                 f"{PARENT_LIMIT_MB} MB) in {p['seconds']:.0f} s. A flood over each cap, sandboxed, ends in "
                 "`KernelResourceError` after: " + ", ".join(
                     f"{name} {t['seconds']:.1f} s" for name, t in result["trips"].items())
                 + f" (target {TRIP_LIMIT_S:.0f} s).")
    lines += ["", "Reproduce: `.venv/bin/python benchmarks/trace_caps.py --doc docs/security.md` (this block)."]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=None, help="the first N cases of each task (default: all)")
    parser.add_argument("--no-honest", action="store_true", help="skip the honest runs (the parent and trips only)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--doc", type=Path, action="append", default=[],
                        help="a markdown file whose trace-caps block is rewritten (repeatable)")
    args = parser.parse_args()
    result = measure(args.cases, not args.no_honest)
    print(json.dumps(result, indent=1) if args.json else markdown(result))
    for doc in args.doc:
        place_block(doc, markdown(result), BEGIN, END)
        print(f"wrote the trace-caps figures into {doc}", file=sys.stderr)
    over = result["parent"]["growth_mb"] >= PARENT_LIMIT_MB or any(
        t["error"] != "KernelResourceError" or t["seconds"] > TRIP_LIMIT_S for t in result["trips"].values())
    return 1 if over else 0


if __name__ == "__main__":
    raise SystemExit(main())
