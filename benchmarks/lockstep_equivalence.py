"""Lane groups against block-by-block runs: the same outputs, records and errors, and the CPU of each.

Every kernel here runs twice in-process (no sandbox), once with every block alone
(`run_functional(..., lockstep=False)`, the simulator before lane groups) and once as it
runs by default (lane groups, sage/npu/sim/lanes.py). Per run it compares the outputs bit
for bit (dtype, shape, NaN where NaN), every instruction record of every block of every
launch, and the error (type and message), and times both. The kernels are the examples in
examples/kernels/ on their tasks' cases, and for every suite task on its first `--cases`
cases either the offline agent's first kernel (`--source agent`, the default: what the
bench evaluates first) or the library's ready kernel file (`--source library`, the tasks
that have one, `sage.bench.reference.kernel_files`).

    .venv/bin/python benchmarks/lockstep_equivalence.py [--cases 1] [--level N] [--source agent] [--json]
                                                       [--doc docs/performance.md]

The agent's kernels take a while to make (it times its candidates); they are kept in
`--kernels DIR` (default runs/lockstep_kernels, one file per task and case count) and
reused by later runs.

It also counts how the launches of the lane runs ran: in lane groups (the last try of the
launch had some), or block by block, and why (the DSL call not written for lanes, a split
limit, or an error that the block-by-block run then reports).

A run that differs is run block by block once more: when that run differs from the first
block-by-block run too (the blocks' random order changes the result, as atomic
accumulation from several blocks does), it is listed as order-dependent, not as a
difference of the lanes.

Every lane run is also timed twice (the replay, `time_run`): with the L2 model's strided
copies accounted in one numpy pass per copy (`IntervalSet.add_bursts`, the default) and
burst by burst (`l2.BULK_BURSTS` out of reach, the code before it); the two profiles must be
equal field for field.

Exit status 1 when any run differs. --json prints {"runs", "differ", "cpu_s_blocks",
"cpu_s_lanes", "launches", "in_lanes", "kinds", "order_dependent", "fallbacks": {reason:
count}, "differences": [...], "replay_differ", "replay_cpu_s_bulk", "replay_cpu_s_bursts"}.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import time
from pathlib import Path

import numpy as np

from sage.npu.execute import FunctionalRun, run_functional, time_run
from sage.npu.hardware import load_preset
from sage.npu.sim import l2, lanes, streams
from sage.npu.sim.session import Session

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from benchmarks.provenance import run_line  # noqa: E402
from benchmarks.suite_summary import place_block  # noqa: E402

EXAMPLES = ROOT / "examples" / "kernels"


def difference(a: FunctionalRun, b: FunctionalRun) -> str | None:
    """What differs between two runs of one kernel on one input, or None."""
    if (a.error is None) != (b.error is None):
        return f"error only {'block by block' if a.error else 'in lanes'}: {(a.error or b.error).message}"
    if a.error is not None:
        if (a.error.type, a.error.message) != (b.error.type, b.error.message):
            return f"errors differ: {a.error.type}: {a.error.message} / {b.error.type}: {b.error.message}"
        return None
    for i, (x, y) in enumerate(zip(a.outputs, b.outputs)):
        if x.dtype != y.dtype or x.shape != y.shape or not np.array_equal(x, y, equal_nan=x.dtype.kind in "fc"):
            return f"output {i} differs"
    la, lb = a.trace.launches, b.trace.launches
    if len(la) != len(lb):
        return f"{len(la)} launches against {len(lb)}"
    for n, (p, q) in enumerate(zip(la, lb)):
        if [(t.block, t.sub, t.core_type, t.records) for t in p.blocks] != \
                [(t.block, t.sub, t.core_type, t.records) for t in q.blocks]:
            return f"launch {n} ({p.name}): records differ"
    return None


def example_runs() -> list[tuple[str, str, list, dict]]:
    from sage.bench.tasks import kernel_args

    pairs = {"add.py": "add_task.py", "softmax.py": "softmax_task.py", "layernorm.py": "layernorm_task.py",
             "matmul.py": "matmul_task.py", "matmul_vector.py": "matmul_task.py",
             "matmul_bias_gelu_mix.py": "matmul_bias_gelu_task.py", "flash_attention.py": "flash_attention_task.py"}
    runs = []
    for kernel, task_file in pairs.items():
        spec = importlib.util.spec_from_file_location(f"lockstep_task_{Path(task_file).stem}", EXAMPLES / task_file)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        source = (EXAMPLES / kernel).read_text()
        for i, case in enumerate(module.get_input_groups()):
            runs.append((f"examples/{kernel} case {i}", source, kernel_args(case), {}))
    return runs


def agent_kernel(task, cases: int) -> str | None:
    """The offline agent's first kernel for `task` (None where it makes none)."""
    from sage.agent.compiler.build import Unsupported
    from sage.agent.offline.agent import CompilerAgent
    from sage.kernels import target_for

    try:
        return CompilerAgent(task, target_for("ascend910b2"), "ascend910b2", evaluated=cases).first([], [])[0]
    except Unsupported:
        return None


def suite_runs(cases: int, level: int | None, source_of: str, keep: Path) -> list[tuple[str, str, list, dict]]:
    from sage.bench.evaluate import select_cases
    from sage.bench.reference.kernel_files import library_kernel_file
    from sage.bench.tasks import kernel_args, load_task, parameter_kwargs, suite_files, level_of

    runs = []
    for path in suite_files():
        if level is not None and level_of(path) != level:
            continue
        task = load_task(path)
        print(f"\rkernels: {task.key[:60]:60}", end="", file=sys.stderr, flush=True)
        kept = keep / f"{source_of}_{cases}_{task.key.replace('/', '__')}.py"
        if kept.exists():
            source = kept.read_text() or None
        else:
            source = library_kernel_file(task) if source_of == "library" else agent_kernel(task, cases)
            keep.mkdir(parents=True, exist_ok=True)
            kept.write_text(source or "")  # (empty: no kernel for this task)
        if source is None:
            continue
        model, selected = select_cases(task, cases)
        kwargs = parameter_kwargs(model)
        runs += [(f"{task.key} case {i}", source, kernel_args(case), kwargs) for i, case in selected]
    return runs


def replay_difference(run: FunctionalRun, spec, cpu: dict[str, float]) -> str | None:
    """Time `run` with the L2 model's strided copies in bulk and burst by burst: what differs."""
    if run.error is not None:
        return None
    profiles = {}
    bulk = l2.BULK_BURSTS
    for mode, threshold in (("bulk", bulk), ("bursts", 1 << 62)):
        l2.BULK_BURSTS = threshold
        try:
            start = time.process_time()
            timed = time_run(run, spec)
            cpu[mode] += time.process_time() - start
        finally:
            l2.BULK_BURSTS = bulk
        profiles[mode] = None if timed.profile is None else timed.profile.model_dump()
    if profiles["bulk"] == profiles["bursts"]:
        return None
    if profiles["bulk"] is None or profiles["bursts"] is None:
        return "one replay failed"
    return ", ".join(k for k in profiles["bulk"] if profiles["bulk"][k] != profiles["bursts"][k])


class LaunchLog:
    """How each launch of the lane runs ran: the (block_dim, partition) of each of its tries and
    the DSL calls that refused lanes in it. A run redone block by block after a lane group failed
    late counts as its redo."""

    def __init__(self) -> None:
        self.launches: list[list] = []
        self.reasons: list[set[str]] = []
        self.refused: list[str] = []
        self.active = False
        run_launch, launch_init = Session._run_launch, streams.LaunchRun.__init__
        refuse_init, abort_init = lanes.NotLaneable.__init__, lanes.LockstepAbort.__init__
        log = self

        def each_launch(session, *args, **kwargs):
            if log.active:
                log.launches.append([])
                log.reasons.append(set())
            return run_launch(session, *args, **kwargs)

        def each_try(run, *args, **kwargs):
            launch_init(run, *args, **kwargs)
            if log.active and log.launches:
                log.launches[-1].append((run.block_dim, run.partition))

        def refuse(exc, *args):
            refuse_init(exc, *args)
            if log.active:
                log.refused.append(str(args[0]) if args else "?")
                if log.reasons:
                    log.reasons[-1].add("refused")

        def abort(exc, *args):
            abort_init(exc, *args)
            if log.active:
                log.launches, log.reasons = [], []
                log.refused.append("a lane group's value outlived its launch: the run was redone")
        Session._run_launch, streams.LaunchRun.__init__ = each_launch, each_try
        lanes.NotLaneable.__init__, lanes.LockstepAbort.__init__ = refuse, abort

    def start(self, active: bool) -> None:
        self.active, self.launches, self.reasons, self.refused = active, [], [], []

    def in_lanes(self) -> int:
        return sum(1 for tries in self.launches if tries and tries[-1][1] is not None)

    def kinds(self) -> dict[str, int]:
        """Launches by how they ended: one block, in lane groups, split into lone blocks (the
        lanes diverged on the block index), or block by block for a refused call or an error."""
        out: dict[str, int] = {}
        for tries, reasons in zip(self.launches, self.reasons):
            if not tries:
                continue
            dim, last = tries[-1]
            kind = ("one block" if dim == 1 else "lane groups" if last is not None else
                    "refused or failed" if reasons or len(tries) == 1 or tries[-2][1] is None else
                    "split into lone blocks")
            out[kind] = out.get(kind, 0) + 1
        return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=1, help="cases per suite task (default 1)")
    parser.add_argument("--source", choices=("agent", "library"), default="agent",
                        help="the suite's kernels: the offline agent's first (default) or the library's")
    parser.add_argument("--level", type=int, default=None, help="only this suite level")
    parser.add_argument("--no-suite", action="store_true", help="the examples only")
    parser.add_argument("--kernels", type=Path, default=ROOT / "runs" / "lockstep_kernels",
                        help="where the suite's kernels are kept between runs")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--doc", type=Path, metavar="PATH",
                        help="also write the summary into PATH between its markers (docs/performance.md)")
    args = parser.parse_args()
    spec = load_preset("ascend910b2")
    runs = example_runs() + ([] if args.no_suite else suite_runs(args.cases, args.level, args.source, args.kernels))
    cpu = {False: 0.0, True: 0.0}
    differences = []
    log = LaunchLog()
    launches = in_lanes = 0
    fallbacks: dict[str, int] = {}
    kinds: dict[str, int] = {}
    order_dependent: list[str] = []
    replay_differences: list[dict] = []
    replay_cpu = {"bulk": 0.0, "bursts": 0.0}
    for n, (label, source, inputs, kwargs) in enumerate(runs, 1):
        done = {}
        for lockstep in (False, True):
            log.start(lockstep)
            start = time.process_time()
            done[lockstep] = run_functional(source, inputs, kwargs, spec=spec, filename="kernel.py", lockstep=lockstep)
            cpu[lockstep] += time.process_time() - start
        log.active = False
        launches += len(log.launches)
        in_lanes += log.in_lanes()
        for kind, count in log.kinds().items():
            kinds[kind] = kinds.get(kind, 0) + count
        for reason in set(log.refused):
            fallbacks[reason] = fallbacks.get(reason, 0) + 1
        replayed = replay_difference(done[True], spec, replay_cpu)
        if replayed is not None:
            replay_differences.append({"run": label, "difference": replayed})
        diff = difference(done[False], done[True])
        if diff is not None and difference(done[False], run_functional(
                source, inputs, kwargs, spec=spec, filename="kernel.py", lockstep=False)) is not None:
            # two block-by-block runs differ too: the blocks' random order changes the result
            # (atomic accumulation in another order rounds otherwise), which no lane run can match
            order_dependent.append(label)
        elif diff is not None:
            differences.append({"run": label, "difference": diff})
        if not args.json:
            print(f"\r[{n}/{len(runs)}] {label[:60]:60}", end="", file=sys.stderr, flush=True)
    if not args.json:
        print(file=sys.stderr)
    summary = {"runs": len(runs), "differ": len(differences), "cpu_s_blocks": round(cpu[False], 2),
               "cpu_s_lanes": round(cpu[True], 2), "launches": launches, "in_lanes": in_lanes, "kinds": kinds,
               "order_dependent": order_dependent,
               "fallbacks": dict(sorted(fallbacks.items(), key=lambda kv: -kv[1])), "differences": differences,
               "replay_differ": replay_differences, "replay_cpu_s_bulk": round(replay_cpu["bulk"], 2),
               "replay_cpu_s_bursts": round(replay_cpu["bursts"], 2)}
    if args.json:
        print(json.dumps(summary, indent=1))
    else:
        print("\n".join(report(summary)))
    if args.doc is not None:
        command = " ".join(["benchmarks/lockstep_equivalence.py", f"--cases {args.cases}", f"--source {args.source}"]
                           + ([f"--level {args.level}"] if args.level is not None else [])
                           + (["--no-suite"] if args.no_suite else []) + [f"--doc {args.doc}"])
        place_block(args.doc, "\n".join([run_line(command), "", "```", *report(summary), "```"]),
                    "<!-- lockstep_equivalence -->", "<!-- /lockstep_equivalence -->")
    return 1 if differences or replay_differences else 0


def report(summary: dict) -> list[str]:
    """The summary as lines of at most 80 columns (the terminal and the doc block)."""
    out = [f"{summary['runs']} runs, {summary['differ']} differ in outputs, records or errors",
           f"functional CPU: block by block {summary['cpu_s_blocks']:.1f} s, in lane groups "
           f"{summary['cpu_s_lanes']:.1f} s ({summary['cpu_s_blocks'] / max(summary['cpu_s_lanes'], 1e-9):.2f}x)",
           f"{summary['launches']} launches:"]
    out += [f"  {count:4} {kind}" for kind, count in sorted(summary["kinds"].items(), key=lambda kv: -kv[1])]
    if summary["fallbacks"]:
        out.append("runs in which lanes were refused (the call), or redone:")
    out += [f"  {count:4} {reason}" for reason, count in summary["fallbacks"].items()]
    if summary["order_dependent"]:
        out.append(f"{len(summary['order_dependent'])} runs change from one block-by-block run to the next "
                   "(random block order):")
        out += [f"  {label}" for label in summary["order_dependent"]]
    out += [f"  {d['run']}: {d['difference']}" for d in summary["differences"]]
    out.append(f"replay, L2 strided copies in one pass against burst by burst: {len(summary['replay_differ'])} "
               f"differ; CPU {summary['replay_cpu_s_bulk']:.1f} s against {summary['replay_cpu_s_bursts']:.1f} s")
    out += [f"  {d['run']}: {d['difference']}" for d in summary["replay_differ"]]
    return out


if __name__ == "__main__":
    sys.exit(main())
