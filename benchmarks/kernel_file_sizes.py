"""Bytes of the kernel file the offline compiler writes for task files (issue 31: at most
64 KB per public file; the sandbox refuses 256 KB), with its case classes and distinct kernels.

    .venv/bin/python benchmarks/kernel_file_sizes.py /tmp/mkb/reference/npukernelbench_level0/*.py
    .venv/bin/python benchmarks/kernel_file_sizes.py FILE --out kernel.py     # also write the file
    .venv/bin/python benchmarks/kernel_file_sizes.py FILE... --json           # one JSON object a file

Every case of each task is compiled (sage.agent.compiler.compiler.compile_cases, the default
schedules); nothing is run. A file whose reference cannot run here (torch_npu, an aten op
this torch lacks) or that the compiler cannot take is reported with its reason and not
counted. The last line sums up: files over 64 KB of those compiled.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sage.agent.compiler.build import SourceTooLarge, Unsupported  # noqa: E402
from sage.agent.compiler.compiler import compile_cases, trace_cases  # noqa: E402
from sage.bench.tasks import ReferenceUnavailable, load_task  # noqa: E402
from sage.kernels import target_for  # noqa: E402

LIMIT_KB = 64          # issue 31's target for every public file


def measure(path: Path, out: Path | None = None) -> dict:
    """One file's row: name, status (compiled | too_large | unsupported | unavailable), bytes,
    classes, kernels, cases, seconds, and the reason when not compiled."""
    began = time.perf_counter()
    row: dict = {"file": str(path), "task": path.stem}
    try:
        task = load_task(path, input_budget=None)
        row["task"] = task.name
        compiled = compile_cases(trace_cases(task), None, target_for("ascend910b2"), task.name)
    except ReferenceUnavailable as exc:
        return row | {"status": "unavailable", "reason": str(exc).splitlines()[0]}
    except SourceTooLarge as exc:          # over the sandbox's limit: no file to measure
        return row | {"status": "too_large", "reason": str(exc), "seconds": round(time.perf_counter() - began, 1)}
    except Unsupported as exc:
        return row | {"status": "unsupported", "reason": str(exc).splitlines()[0]}
    size = len(compiled.source.encode())
    if out is not None:
        out.write_text(compiled.source)
    return row | {"status": "compiled", "bytes": size, "classes": compiled.rules, "kernels": compiled.kernels,
                  "cases": len(compiled.cases), "seconds": round(time.perf_counter() - began, 1)}


def line(row: dict) -> str:
    if row["status"] != "compiled":
        return f"{row['task']}: {row['status']} ({row['reason']})"
    size = row["bytes"]
    over = "  OVER 64 KB" if size > LIMIT_KB * 1024 else ""
    return (f"{row['task']}: {size} bytes ({size / 1024:.1f} KB), {row['classes']} case classes, "
            f"{row['kernels']} kernels, {row['cases']} cases, {row['seconds']:.0f} s{over}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--out", type=Path, default=None, help="write the (last) kernel file here")
    parser.add_argument("--json", action="store_true", help="one JSON object a file, then a summary object")
    args = parser.parse_args()
    rows = []
    for path in args.files:
        row = measure(path, args.out)
        rows.append(row)
        print(json.dumps(row) if args.json else line(row), flush=True)
    measured = [r for r in rows if r["status"] in ("compiled", "too_large")]
    over = [r for r in measured if r["status"] == "too_large" or r["bytes"] > LIMIT_KB * 1024]
    summary = {"over_64kb": len(over), "measured": len(measured), "files": len(rows),
               "over": [r["task"] for r in over]}
    if args.json:
        print(json.dumps({"summary": summary}))
    else:
        print(f"{len(over)} of {len(measured)} compiled files over {LIMIT_KB} KB "
              f"({len(rows) - len(measured)} not compiled){': ' + ', '.join(summary['over']) if over else ''}")


if __name__ == "__main__":
    main()
