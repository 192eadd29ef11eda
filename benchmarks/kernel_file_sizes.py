"""Bytes of the kernel file the offline compiler writes for task files (issue 31: at most
64 KB per public file; the sandbox refuses 256 KB), with its case classes and distinct kernels.

    .venv/bin/python benchmarks/kernel_file_sizes.py /tmp/mkb/reference/npukernelbench_level0/1_logical_and.py [...]
    .venv/bin/python benchmarks/kernel_file_sizes.py FILE --out kernel.py     # also write the file

Every case of each task is compiled (sage.agent.compiler.compiler.compile_cases, the default
schedules); nothing is run.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sage.agent.compiler.build import Unsupported  # noqa: E402
from sage.agent.compiler.compiler import compile_cases, trace_cases  # noqa: E402
from sage.bench.tasks import load_task  # noqa: E402
from sage.kernels import target_for  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--out", type=Path, default=None, help="write the (last) kernel file here")
    args = parser.parse_args()
    for path in args.files:
        began = time.perf_counter()
        task = load_task(path, input_budget=None)
        try:
            compiled = compile_cases(trace_cases(task), None, target_for("ascend910b2"), task.name)
        except Unsupported as exc:
            print(f"{task.name}: unsupported ({exc})")
            continue
        size = len(compiled.source.encode())
        print(f"{task.name}: {size} bytes ({size / 1024:.1f} KB), {compiled.rules} case classes, "
              f"{compiled.kernels} kernels, {len(compiled.cases)} cases, {time.perf_counter() - began:.0f} s")
        if args.out is not None:
            args.out.write_text(compiled.source)


if __name__ == "__main__":
    main()
