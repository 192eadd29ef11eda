"""CPU cost of the suite evaluation, this checkout against the code before the machine issue,
side by side in one run.

Issue 10 asks the suite evaluation (`benchmarks/suite_eval.py`: every case's reference plus
the library's kernel files judged in the sandboxed simulator) to cost >= 1.7x less CPU than
the code as it was before that issue (commit b4759c7). This script extracts that commit with
`git archive` into a temporary folder, then runs the same `suite_eval.py` command in both
trees, one after the other, with this interpreter, and reports the CPU seconds of each run:
the busy time of all CPUs (user, nice, system, irq, softirq from /proc/stat) between the
start and the end of each run. /proc/stat counts every process on the machine, so run this
on an otherwise quiet machine; the idle share of each run is printed so a reader can tell.

Beside it, the run's own process tree ("tree CPU"): this script makes itself the child
subreaper (Linux), so the forkserver, its workers and the sandbox zygote, which outlive the
processes that started them, are handed to it and reaped here, and getrusage(RUSAGE_CHILDREN)
then holds the CPU of every process the run started (each reaped process brings the CPU of
the children it reaped). Without the subreaper those processes were reaped by init and their
CPU was lost (15-20 s reported for runs whose workers kept both cores busy for 40 s). Other
load on the machine does not enter the tree figure, though it still slows what it counts
(shared caches, and thread pools that spin while waiting for a core).

    .venv/bin/python benchmarks/eval_cpu.py [--baseline b4759c7] [--level 0] [--cases 1] [--workers 2] [--json]

The two trees evaluate the same task files with their own code, so a task the old code could
not evaluate (or that the new code refuses) costs what it cost there; the script prints both
runs' last lines so the reader can check they judged the same kernels.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PR_SET_CHILD_SUBREAPER = 36
REAP_WAIT_S = 60.0          # how long the run's leftover processes may take to exit


def _commit(ref: str) -> str:
    return subprocess.run(["git", "rev-parse", "--short", ref], cwd=ROOT, capture_output=True, text=True,
                          check=True).stdout.strip()


def extract(ref: str, into: Path) -> Path:
    """The tree of commit `ref`, unpacked into `into`."""
    archive = subprocess.run(["git", "archive", "--format=tar", ref], cwd=ROOT, capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return into


def machine_cpu() -> tuple[float, float]:
    """(busy, idle) CPU seconds of the whole machine since boot, from /proc/stat's cpu line."""
    fields = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    user, nice, system, idle, iowait, irq, softirq = fields[:7]
    steal = fields[7] if len(fields) > 7 else 0
    tick = os.sysconf("SC_CLK_TCK")
    return (user + nice + system + irq + softirq + steal) / tick, (idle + iowait) / tick


def become_subreaper() -> bool:
    """Orphaned descendants are handed to this process instead of init (Linux only)."""
    if not sys.platform.startswith("linux"):
        return False
    return ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0


def reap_descendants(deadline_s: float = REAP_WAIT_S) -> int:
    """Waits for the processes handed to this subreaper to exit and reaps them; how many were
    still running at the deadline (left running: they are not this script's to kill)."""
    end = time.monotonic() + deadline_s
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return 0
        if pid == 0:
            if time.monotonic() > end:
                return len(_children())
            time.sleep(0.05)


def _children() -> list[int]:
    """This process's live children (from /proc: the orphans it was handed included)."""
    me = str(os.getpid())
    kids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if stat.rsplit(")", 1)[1].split()[1] == me:
                kids.append(int(entry))
    return kids


def tree_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def measure(tree: Path, argv: list[str], subreaper: bool = False) -> dict:
    """One suite_eval run in `tree`: the machine's busy CPU seconds during it, the CPU seconds
    of the run's own processes (with `subreaper`; else None), wall seconds."""
    busy0, idle0 = machine_cpu()
    tree0 = tree_cpu()
    began = time.perf_counter()
    proc = subprocess.run([sys.executable, "benchmarks/suite_eval.py", *argv], cwd=tree, capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": str(tree)})
    wall = time.perf_counter() - began
    left = reap_descendants() if subreaper else 0
    busy1, idle1 = machine_cpu()
    busy, idle = busy1 - busy0, idle1 - idle0
    tail = (proc.stdout.strip().splitlines() or [""])[-3:]
    return {"cpu_s": round(busy, 1), "idle_share": round(idle / max(busy + idle, 1e-9), 2), "wall_s": round(wall, 1),
            "tree_cpu_s": round(tree_cpu() - tree0, 1) if subreaper and not left else None,
            "returncode": proc.returncode, "tail": tail,
            "stderr": proc.stderr.strip().splitlines()[-3:] if proc.returncode else []}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", default="b4759c7", help="the commit before the machine issue")
    parser.add_argument("--level", type=int, action="append", help="only these levels (default: all)")
    parser.add_argument("--cases", type=int, default=None, help="first K cases per task (default: all)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    argv = ["--workers", str(args.workers)]
    for level in args.level or []:
        argv += ["--level", str(level)]
    if args.cases is not None:
        argv += ["--cases", str(args.cases)]
    subreaper = become_subreaper()
    with tempfile.TemporaryDirectory(prefix="sage-baseline-") as tmp:
        base_tree = extract(args.baseline, Path(tmp))
        # byte-compile it first, as a checkout that has run before is: the runs compare evaluation
        # work, not one tree's first imports
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(base_tree / "sage"), str(base_tree / "benchmarks")],
                       check=True, capture_output=True)
        runs = {"baseline": {"commit": _commit(args.baseline), **measure(base_tree, argv, subreaper)},
                "current": {"commit": _commit("HEAD"), **measure(ROOT, argv, subreaper)}}
    result = {"command": "python benchmarks/eval_cpu.py " + " ".join(sys.argv[1:]), "suite_eval_args": argv,
              "runs": runs, "cpu_ratio": _ratio(runs, "cpu_s"), "tree_cpu_ratio": _ratio(runs, "tree_cpu_s"),
              "target": 1.7}
    if args.json:
        print(json.dumps(result))
        return
    print(f"suite_eval.py {' '.join(argv)}, side by side:")
    for name, run in runs.items():
        own = "   -" if run["tree_cpu_s"] is None else f"{run['tree_cpu_s']:5.1f}"
        print(f"  {name:8} {run['commit']}: {run['cpu_s']:5.1f} CPU s (tree {own})  {run['wall_s']:5.1f} wall s  "
              f"idle {run['idle_share']:.0%}  exit {run['returncode']}")
        for line in run["tail"] + run["stderr"]:
            print(f"           | {line[:66]}")
    print(f"CPU ratio baseline / current: {result['cpu_ratio']}x, tree {result['tree_cpu_ratio']}x "
          f"(target >= {result['target']}x)")


def _ratio(runs: dict, key: str) -> float | None:
    base, current = runs["baseline"][key], runs["current"][key]
    return round(base / current, 2) if base and current else None


if __name__ == "__main__":
    main()
