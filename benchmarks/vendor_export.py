"""Which kernels of examples/kernels/ export to AscendNPU IR and pass the vendor compiler's pipeline
(issue 29, docs/export.md): one row per kernel and case.

    .venv/bin/python benchmarks/vendor_export.py                 # every example, every case
    .venv/bin/python benchmarks/vendor_export.py --case 0 --json # case 0 only, one JSON object

Each kernel's task is the file its docstring names ("task: add_task.py"). Per case the kernel
runs once (sage.export.export_kernel, as `sage export` does) and, where it exports, the IR goes
through `bishengir-compile --target=Ascend910B2` (the `ascendnpu-ir` extra); "passes" means the
pipeline ran to its end and stopped only because CANN's hivmc is absent. Without the extra the
verdict column says why the check did not run.
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

from sage.bench.evaluate import select_cases  # noqa: E402
from sage.bench.tasks import kernel_args, load_task, parameter_kwargs  # noqa: E402
from sage.export import check_ir, export_kernel, unavailable_reason  # noqa: E402
from sage.npu.hardware import load_preset  # noqa: E402

EXAMPLES = ROOT / "examples" / "kernels"
TARGET = "Ascend910B2"
_TASK = re.compile(r"task: (\w+\.py)")


def rows(case: int | None) -> list[dict]:
    spec = load_preset("ascend910b2")
    why_not = unavailable_reason()
    out = []
    for kernel in sorted(p for p in EXAMPLES.glob("*.py") if not p.name.endswith("_task.py")):
        source = kernel.read_text()
        named = _TASK.search(source)
        if named is None:
            out.append({"kernel": kernel.name, "case": None, "exported": False, "refusal": "no task named", "check": None})
            continue
        task = load_task(EXAMPLES / named.group(1))
        task.seed = 0
        indices = [case] if case is not None else range(len(task.cases()))
        for i in indices:
            began = time.perf_counter()
            model, [(_, inputs)] = select_cases(task, [i])
            exported = export_kernel(source, kernel_args(inputs), parameter_kwargs(model), spec=spec,
                                     filename=kernel.name)
            row = {"kernel": kernel.name, "case": i, "exported": exported.text is not None,
                   "refusal": exported.refusal, "blocks": exported.blocks, "groups": exported.groups,
                   "ops": exported.ops, "passed": None, "check": None}
            if exported.text is not None:
                if why_not is not None:
                    row["check"] = why_not
                else:
                    result = check_ir(exported.text, target=TARGET, kernel_file=kernel.name, lines=exported.lines)
                    row["passed"], row["check"] = result.passed, result.line
            row["seconds"] = round(time.perf_counter() - began, 2)
            out.append(row)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", type=int, default=None, help="only this case of each task (default: all)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    table = rows(args.case)
    summary = {"target": TARGET, "rows": len(table), "exported": sum(r["exported"] for r in table),
               "passed": sum(bool(r.get("passed")) for r in table)}
    if args.json:
        print(json.dumps({**summary, "table": table}))
        return
    print(f"{'kernel':<26} {'case':>4}  {'blocks':>6} {'groups':>6} {'ops':>5}  verdict")
    for r in table:
        verdict = r["check"] if r["exported"] else f"not exported: {r['refusal']}"
        figures = (f"{r['blocks']:>6} {r['groups']:>6} {r['ops']:>5}" if r["exported"] else f"{'-':>6} {'-':>6} {'-':>5}")
        print(f"{r['kernel']:<26} {str(r['case']):>4}  {figures}  {verdict}")
    print(f"\n{summary['exported']} of {summary['rows']} kernel-cases export; {summary['passed']} pass the vendor "
          f"pipeline for {TARGET}")


if __name__ == "__main__":
    main()
