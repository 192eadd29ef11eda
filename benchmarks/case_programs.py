"""What every own-suite case launches, as one hash per task: each case's traced launches
(kernel text, tiling values, buffers) under the default schedules. Two checkouts whose hashes
agree run the same kernels on the same tilings for every case, so their simulated times and
outputs cannot differ, whatever changed in the host code around them (case classes, tiling
functions): the check for a change meant to leave the kernels alone.

    .venv/bin/python benchmarks/case_programs.py --out now.json                  # this checkout
    git worktree add /tmp/before REV && cp benchmarks/case_programs.py /tmp/before/benchmarks/
    .venv/bin/python /tmp/before/benchmarks/case_programs.py --out before.json   # REV's sage
    .venv/bin/python benchmarks/case_programs.py --compare before.json now.json  # tasks that differ

A task the compiler cannot take is recorded with its reason (the same reason at both is no
difference). Nothing is run on the simulator; the 102 tasks take 2-6 minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def task_hash(path: Path) -> str:
    """The task's launches over every case, hashed; or "unsupported: <reason>"."""
    from sage.agent.compiler.build import Unsupported
    from sage.agent.compiler.compiler import Room, _UNMERGED_SLACK, case_code, default_schedule, trace_cases
    from sage.bench.tasks import load_task
    from sage.kernels import target_for

    digest = hashlib.sha1()
    room, schedules, target = Room(1 << 30, _UNMERGED_SLACK), {}, target_for("ascend910b2")
    try:
        for k, case in enumerate(trace_cases(load_task(path))):
            for launch in case_code(k, case, default_schedule, schedules, target, room).launches:
                digest.update(launch.kernel.encode())
                digest.update(repr((launch.tiling(), launch.args)).encode())
    except Unsupported as exc:        # a tile that does not fit UB included
        return f"unsupported: {str(exc).splitlines()[0][:120]}"
    return digest.hexdigest()[:16]


def compare(before: dict[str, str], now: dict[str, str]) -> list[str]:
    """Tasks whose hash differs, or that one side lacks."""
    return sorted(k for k in before.keys() | now.keys() if before.get(k) != now.get(k))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="write {task: hash} here")
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("BEFORE", "NOW"), help="list the tasks that differ")
    args = parser.parse_args()
    if args.compare:
        before, now = (json.loads(p.read_text()) for p in args.compare)
        differ = compare(before, now)
        print(f"{len(differ)} of {len(before.keys() | now.keys())} tasks differ"
              f"{': ' + ', '.join(differ) if differ else ''}; "
              f"{sum(str(v).startswith('unsupported') for v in now.values())} unsupported in NOW")
        return 1 if differ else 0
    if args.out is None:
        parser.error("give --out FILE or --compare BEFORE NOW")
    from sage.bench.tasks import suite_files

    began, out = time.perf_counter(), {}
    for path in suite_files():
        out[path.stem] = task_hash(path)
        args.out.write_text(json.dumps(out, indent=0, sort_keys=True))
    print(f"{len(out)} tasks in {time.perf_counter() - began:.0f} s -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
