"""Which kernels of examples/kernels/ export to AscendNPU IR and pass the vendor compiler's pipeline
(issue 29, docs/export.md): one row per kernel and case.

    .venv/bin/python benchmarks/vendor_export.py                 # every example, every case
    .venv/bin/python benchmarks/vendor_export.py --case 0 --json # case 0 only, one JSON object
    .venv/bin/python benchmarks/vendor_export.py --offline sage/bench/npukernelbench/level0 [...]
                                      # the offline compiler's kernel of each task file, case 0

Each kernel's task is the file its docstring names ("task: add_task.py"). Per case the kernel
runs once (sage.export.export_kernel, as `sage export` does) and, where it exports, the IR goes
through `bishengir-compile --target=Ascend910B2` (the `ascendnpu-ir` extra); "passes" means the
pipeline ran to its end and stopped only because CANN's hivmc is absent. Without the extra the
verdict column says why the check did not run. The `ref` column is an independent reading of the
exported text (sage.export.interpret, numpy) judged against the PyTorch reference as `sage npu
run` judges a kernel: "ok" when it matches.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from sage.bench.correctness import compare_outputs  # noqa: E402
from sage.bench.evaluate import reference_outputs, select_cases, truth_outputs  # noqa: E402
from sage.bench.tasks import kernel_args, load_task, parameter_kwargs  # noqa: E402
from sage.export import check_ir, export_kernel, unavailable_reason  # noqa: E402
from sage.export.interpret import run_exported  # noqa: E402
from sage.npu.hardware import load_preset  # noqa: E402

EXAMPLES = ROOT / "examples" / "kernels"
TARGET = "Ascend910B2"
_TASK = re.compile(r"task: (\w+\.py)")


def example_rows(case: int | None) -> list[dict]:
    out = []
    for kernel in sorted(p for p in EXAMPLES.glob("*.py") if not p.name.endswith("_task.py")):
        source = kernel.read_text()
        named = _TASK.search(source)
        if named is None:
            out.append({"kernel": kernel.name, "case": None, "exported": False, "refusal": "no task named",
                        "check": None, "interpreted": None})
            continue
        task = load_task(EXAMPLES / named.group(1))
        task.seed = 0
        for i in [case] if case is not None else range(len(task.cases())):
            out.append(one_row(kernel.name, source, task, i))
    return out


def offline_rows(folders: list[Path], case: int) -> list[dict]:
    """The offline compiler's kernel (default schedules) of every task file in `folders` (folders or files)."""
    from sage.agent.compiler.build import Unsupported
    from sage.agent.compiler.compiler import compile_cases, trace_cases
    from sage.kernels import target_for

    out = []
    files = [p for f in folders for p in (sorted(f.glob("*.py")) if f.is_dir() else [f]) if not p.name.startswith("_")]
    for path in files:
        name = f"{path.parent.name}/{path.stem}"
        task = load_task(path)
        task.seed = 0
        try:
            source = compile_cases(trace_cases(task), None, target_for("ascend910b2"), task.name).source
        except Unsupported as exc:
            out.append({"kernel": name, "case": case, "exported": False, "refusal": f"(no kernel: {exc})",
                        "check": None, "interpreted": None, "compiled": False})
            continue
        out.append({**one_row(name, source, task, case), "compiled": True})
    return out


def one_row(name: str, source: str, task, case: int) -> dict:
    began = time.perf_counter()
    model, [(_, inputs)] = select_cases(task, [case])
    args, kwargs = kernel_args(inputs), parameter_kwargs(model)
    exported = export_kernel(source, args, kwargs, spec=load_preset("ascend910b2"), filename=Path(name).name)
    row = {"kernel": name, "case": case, "exported": exported.text is not None, "refusal": exported.refusal,
           "blocks": exported.blocks, "groups": exported.groups, "ops": exported.ops, "passed": None, "check": None,
           "interpreted": None}
    if exported.text is not None:
        row["interpreted"] = interpreted(exported, model, inputs, args, kwargs)
        why_not = unavailable_reason()
        if why_not is not None:
            row["check"] = why_not
        else:
            result = check_ir(exported.text, target=TARGET, kernel_file=Path(name).name, lines=exported.lines)
            row["passed"], row["check"] = result.passed, result.line
    row["seconds"] = round(time.perf_counter() - began, 2)
    return row


def interpreted(exported, model, inputs: list, args: list, kwargs: dict) -> bool:
    """The exported text run by the reference interpreter matches the PyTorch reference."""
    tensors = [a for a in args if isinstance(a, np.ndarray)] + list(kwargs.values())
    expected = reference_outputs(model, inputs)
    outputs = run_exported(exported, tensors)
    if len(outputs) != len(expected):
        return False
    outputs = [o.reshape(e.shape) for o, e in zip(outputs, expected)]
    return compare_outputs(expected, outputs, truth=truth_outputs(model, inputs, len(expected))).correct


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", type=int, default=None, help="only this case of each task (default: all)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--offline", nargs="+", type=Path, default=None, metavar="DIR",
                        help="instead of the examples: the offline compiler's kernels of these task folders (or files)")
    args = parser.parse_args()
    table = offline_rows(args.offline, args.case or 0) if args.offline else example_rows(args.case)
    summary = {"target": TARGET, "rows": len(table), "exported": sum(r["exported"] for r in table),
               "passed": sum(bool(r.get("passed")) for r in table),
               "interpreted_ok": sum(bool(r.get("interpreted")) for r in table)}
    if args.offline:
        summary["compiled"] = sum(bool(r.get("compiled")) for r in table)
    if args.json:
        print(json.dumps({**summary, "table": table}))
        return
    print(f"{'kernel':<24} {'case':>4} {'blocks':>6} {'groups':>6} {'ops':>4} {'ref':>4}  verdict")
    for r in table:
        verdict = r["check"] if r["exported"] else f"not exported: {r['refusal']}"
        ref = "-" if r["interpreted"] is None else "ok" if r["interpreted"] else "BAD"
        figures = (f"{r['blocks']:>6} {r['groups']:>6} {r['ops']:>4}" if r["exported"] else f"{'-':>6} {'-':>6} {'-':>4}")
        print(f"{r['kernel']:<24} {str(r['case']):>4} {figures} {ref:>4}  {verdict}"[:160])
    if args.offline:
        print(f"\n{summary['compiled']} of {summary['rows']} task files get a kernel from the offline compiler", end="")
    print(f"\n{summary['exported']} of {summary['rows']} kernel-cases export; {summary['passed']} pass the vendor "
          f"pipeline for {TARGET}; {summary['interpreted_ok']} match the reference when the IR is interpreted")


if __name__ == "__main__":
    main()
