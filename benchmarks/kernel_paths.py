"""The kernel paths the reference model gives every aten call of the own suite (and of the public
NPUKernelBench files), and what they change in the reference times.

    .venv/bin/python benchmarks/kernel_paths.py                                   # own suite
    .venv/bin/python benchmarks/kernel_paths.py /tmp/mkb --doc docs/kernel_paths.md   # + public files
    .venv/bin/python benchmarks/kernel_paths.py /tmp/mkb --json > paths.json      # about 35 min at load 14
    .venv/bin/python benchmarks/kernel_paths.py /tmp/mkb --from-json paths.json --doc docs/kernel_paths.md

The public files are MultiKernelBench's reference/npukernelbench_level*/ (commit 460a972:
`git clone https://github.com/wzzll123/MultiKernelBench /tmp/mkb && git -C /tmp/mkb checkout 460a972`).
Every case of every task is timed by the reference model (`sage.bench.reference.reference_time`)
twice: with the kernel paths (sage/bench/reference/kernel_paths.py) and with one AI-core kernel per
call (`kernel_paths=False`, the model before them). Cases are timed on their sized inputs (meta
tensors, nothing made); a forward that needs values is timed on inputs made for real (within
--max-input-gb); a task file that needs an accelerator, and a case no 910B kernel can take (fp64,
complex: `sage bench --reference-only` does not measure it either), are counted and not run.

Printed: each (aten op, input dtypes) with its path (the PATHS row, "default" or "fused"), units,
kernels, the number of tasks that call it and the row's first source (--json: every row); then
every case whose reference time (end to end) changes, before -> after. --doc writes both between
the markers of docs/kernel_paths.md.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.provenance import run_line  # noqa: E402
from benchmarks.suite_summary import place_block  # noqa: E402
from sage.bench.input_size import GB, InputsTooLarge, has_meta, on_meta, sized_support  # noqa: E402
from sage.bench.reference import reference_time  # noqa: E402
from sage.bench.reference.kernel_paths import DEFAULT_NOTE, RULES  # noqa: E402
from sage.bench.tasks import ReferenceUnavailable, TaskLoadError, load_task, suite_files, task_files  # noqa: E402
from sage.npu.hardware import load_preset  # noqa: E402

BEGIN, END = "<!-- kernel-paths:begin -->", "<!-- kernel-paths:end -->"
PUBLIC_GLOB = "npukernelbench_level*"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkout", type=Path, nargs="?",
                        help="a MultiKernelBench checkout (its public NPUKernelBench files)")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.add_argument("--doc", type=Path, default=None, help="write the tables between the markers of this doc")
    parser.add_argument("--max-input-gb", type=float, default=4.0)
    parser.add_argument("--preset", default="ascend910b2")
    parser.add_argument("--from-json", type=Path, default=None,
                        help="render a saved --json result instead of timing (the doc from a finished run)")
    args = parser.parse_args()
    sets = {"suite": suite_files()}
    if args.checkout is not None:
        folders = sorted((args.checkout / "reference").glob(PUBLIC_GLOB))
        if not folders:
            parser.error(f"{args.checkout}/reference/{PUBLIC_GLOB}: no such folders (give a MultiKernelBench checkout)")
        sets["public"] = [f for d in folders for f in sorted(task_files(d))]
    hw = load_preset(args.preset)
    if args.from_json is not None:
        result = json.loads(args.from_json.read_text(encoding="utf-8"))
    else:
        result = {name: scan(files, hw, int(args.max_input_gb * GB), label=name) for name, files in sets.items()}
    if args.json:
        print(json.dumps(result, indent=1))
    else:
        print(render(result))
    if args.doc is not None:
        # CHECKOUT, as docs/results.md names it: docs cite no path outside the repository
        command = ("benchmarks/kernel_paths.py" + (" CHECKOUT" if args.checkout else "")
                   + (f" --from-json {args.from_json}" if args.from_json else "") + f" --doc {args.doc}")
        place_block(args.doc, run_line(command) + "\n\n" + render(result), BEGIN, END)


def scan(files: list[Path], hw, budget: int, label: str) -> dict:
    """Every (op, dtypes, path) of the files' references with the tasks that call it, and each
    case whose reference time the kernel paths change."""
    ops: dict[tuple, set[str]] = defaultdict(set)
    changes: list[dict] = []
    skipped: dict[str, str] = {}
    cases_timed = 0
    for f in files:
        key = f"{label}/{f.parent.name}/{f.stem}"
        print(f"kernel_paths: {key}", file=sys.stderr, flush=True)
        try:
            task = load_task(f, check_inputs=False, input_budget=budget)
            sized = task.sized_cases()
        except (TaskLoadError, ReferenceUnavailable, InputsTooLarge) as exc:
            skipped[key] = type(exc).__name__
            continue
        real: list | None = None
        for i, case in enumerate(sized):
            unsupported = sized_support(case, None)   # fp64, complex, over 2^28 elements: not measured (reference_run)
            if unsupported:
                skipped[f"{key}:{i}"] = unsupported
                continue
            try:
                pair, real = _timed(task, case, i, real, hw)
            except Exception as exc:  # the task's forward or inputs: counted per case, with why
                skipped[f"{key}:{i}"] = f"{type(exc).__name__}: {str(exc)[:80]}"
                continue
            cases_timed += 1
            new, old = pair
            for o in new.ops:
                if o.op_class == "sync":
                    continue
                path = "fused" if o.op_class == "fused" else o.path
                kernels = "+".join(k["name"] for k in o.path_kernels) if o.path_kernels else ""
                ops[(o.op, tuple(dict.fromkeys(o.dtypes)), path, o.unit, o.kernels, kernels)].add(key)
            if abs(new.end_to_end_us - old.end_to_end_us) > 1e-9:
                changes.append(dict(task=key, case=i, before_us=old.end_to_end_us, after_us=new.end_to_end_us,
                                    paths=sorted({f"{o.op} {'/'.join(dict.fromkeys(o.dtypes))} -> {o.path} ({o.unit})"
                                                  for o in new.ops if o.path != "default" and o.op_class != "sync"
                                                  and (o.kernels > 1 or o.unit != "aicore")})))
    rows = [dict(op=op, dtypes=list(dt), path=path, units=unit, kernels=k, names=names, tasks=len(tasks),
                 source=_source(path)) for (op, dt, path, unit, k, names), tasks in sorted(ops.items())]
    return dict(files=len(files), cases_timed=cases_timed, skipped=skipped, ops=rows, changes=changes)


def _source(path: str) -> str:
    if path in RULES:
        return RULES[path].sources[0]
    return DEFAULT_NOTE if path == "default" else "the task's FUSED_OP: one kernel (docs/reference-model.md §4)"


def _timed(task, case: list, index: int, real: list | None, hw):
    """(with paths, without) for one case: on its sized inputs, else on inputs made for real."""
    try:
        args = on_meta(case) if has_meta(case) else case
        return _pair(task, args, hw), real
    except Exception:
        if not has_meta(case):
            raise
    real = real if real is not None else task.cases()
    if has_meta(real[index]):
        raise InputsTooLarge("the forward needs values and the case is over the input budget")
    return _pair(task, real[index], hw), real


def _pair(task, args: list, hw):
    """The case timed with the kernel paths and without. Where every call took one AI-core kernel
    doing its own work, the two chains are the same by construction (tests/bench/test_kernel_paths.py
    checks it on suite cases), so the second timing is spared."""
    new = reference_time(task, args, hw)
    if all(o.kernels <= 1 and o.unit in ("aicore", "") for o in new.ops):
        return new, new
    return new, reference_time(task, args, hw, kernel_paths=False)


def render(result: dict) -> str:
    out: list[str] = []
    for name, r in result.items():
        out.append(f"### {name}: {r['files']} files, {r['cases_timed']} cases timed, {len(r['skipped'])} files or "
                   "cases not timed (an accelerator needed, fp64 or complex, a load or forward error, or over the input "
                   "budget; --json lists them)\n")
        other = [o for o in r["ops"] if o["path"] in RULES and (o["kernels"] > 1 or o["units"] != "aicore")]
        grouped: dict[tuple, list] = defaultdict(lambda: [[], 0])
        for o in other:
            g = grouped[(o["op"], o["path"], o["units"], o["kernels"], o["names"])]
            g[0].append(", ".join(o["dtypes"]))
            g[1] += o["tasks"]
        out.append("Calls that take more than one kernel or the AI CPU (the `PATHS` rows of "
                   "sage/bench/reference/kernel_paths.py; input dtypes, one set per call kind):\n")
        out.append("| aten op | input dtypes | path | units | kernels | task uses | source |")
        out.append("|---|---|---|---|---|---|---|")
        for (op, path, units, k, names), (dts, uses) in grouped.items():
            out.append(f"| {op} | {' / '.join(dts)} | {path} | {units} | {k} ({names}) | {uses} | "
                       f"{_source(path)} |")
        out.append("\n" + _listing("Ops with a `PATHS` row whose calls here take its one AI-core kernel",
                                   [o for o in r["ops"] if o["path"] in RULES and o not in other]))
        out.append(_listing(f"Default (one AI-core kernel, {DEFAULT_NOTE})",
                            [o for o in r["ops"] if o["path"] == "default"]))
        out.append(_listing("Fused torch_npu operators (one kernel each, the task's FUSED_OP)",
                            [o for o in r["ops"] if o["path"] == "fused"]))
        out.append(_changes(r["changes"]))
    return "\n".join(out)


def _changes(changes: list[dict]) -> str:
    """Per task: how many cases change, and the after / before ratio of their end-to-end time."""
    by_task: dict[str, list] = defaultdict(list)
    for c in changes:
        by_task[c["task"]].append(c)
    lines = [f"Reference time (end to end) with the paths against one AI-core kernel per call: {len(changes)} cases "
             f"of {len(by_task)} tasks change (every other case is unchanged):\n",
             "| task | cases changed | before µs | after µs | after / before (min, median, max) | paths |",
             "|---|---|---|---|---|---|"]
    for task, cs in by_task.items():
        ratios = sorted(c["after_us"] / c["before_us"] for c in cs)
        before = f"{min(c['before_us'] for c in cs):.2f}-{max(c['before_us'] for c in cs):.2f}"
        after = f"{min(c['after_us'] for c in cs):.2f}-{max(c['after_us'] for c in cs):.2f}"
        if len(cs) == 1:
            before, after = f"{cs[0]['before_us']:.2f}", f"{cs[0]['after_us']:.2f}"
        paths = sorted({p.split(" -> ")[1] for c in cs for p in c["paths"]})
        lines.append(f"| {task} | {len(cs)} (case {', '.join(str(c['case']) for c in cs[:6])}"
                     f"{', ...' if len(cs) > 6 else ''}) | {before} | {after} | {ratios[0]:.2f}x, "
                     f"{ratios[len(ratios) // 2]:.2f}x, {ratios[-1]:.2f}x | {'; '.join(paths)} |")
    return "\n".join(lines) + "\n"


def _listing(title: str, rows: list[dict]) -> str:
    """One line per op: its dtype sets and the tasks calling it."""
    by_op: dict[str, list] = defaultdict(lambda: [set(), 0])
    for o in rows:
        by_op[o["op"]][0].add(",".join(o["dtypes"]) or "-")
        by_op[o["op"]][1] += o["tasks"]
    items = "; ".join(f"{op} [{' | '.join(sorted(d))}] ({n} task uses)" for op, (d, n) in sorted(by_op.items()))
    return f"{title}: {len(by_op)} ops: {items}\n"


if __name__ == "__main__":
    main()
