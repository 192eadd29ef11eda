"""The offline compiler on a task suite: per task, does it compile, is its kernel correct,
how fast is it; a per-level table and the failures grouped by reason class.

    .venv/bin/python benchmarks/compiler_coverage.py --out runs/compiler_coverage            # npukernelbench
    .venv/bin/python benchmarks/compiler_coverage.py --cases 1 --levels 0,1                   # a quick sweep
    .venv/bin/python benchmarks/compiler_coverage.py --suite PATH/TO/reference --out runs/pub   # other task files
    .venv/bin/python benchmarks/compiler_coverage.py --out runs/compiler_coverage --report-only

It runs exactly what the offline agent's first answer is (the compiler with the default
schedule and search budget, no memory, no refinement turns): `OfflineBackend` through
`sage.agent.loop.synthesize` with zero refinement turns, so every kernel is source text
judged by `sage.bench.evaluate.evaluate_kernel`. Rows go to OUT/rows.jsonl (resumable);
the report is OUT/report.md.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import statistics
import sys
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.provenance import checkout_commit  # noqa: E402

# Markers of the compiler section in docs/results.md (benchmarks/offline_suite.py keeps it).
COMPILER_BEGIN, COMPILER_END = "<!-- compiler-coverage -->", "<!-- /compiler-coverage -->"

# Failure classes: the first pattern found in the reason names the class (the same classes
# report.md and `sage bench` group reasons by).
from sage.bench.reasons import REASON_CLASSES, classify  # noqa: E402,F401 - classify is this script's API too


def run_task(args: tuple[str, int | None, str]) -> dict:
    path, cases, preset = args
    from sage.agent.backends.offline import OfflineBackend
    from sage.agent.loop import AgentConfig, ReferenceProblem, synthesize
    from sage.bench.tasks import load_task

    task = load_task(Path(path))
    began = time.perf_counter()
    row: dict = {"task": task.key, "level": task.level}
    backend = OfflineBackend(task, preset=preset)
    try:
        result = synthesize(task, backend, None, AgentConfig(iterations=0, memory_mode="none", cases=cases,
                                                              preset=preset))
    except ReferenceProblem as exc:
        row.update(status="reference_problem", reason=str(exc))
        return row
    except Exception as exc:  # noqa: BLE001 - a compiler bug is this task's row, not the end of the run
        row.update(status="compiler_error", reason=f"{type(exc).__name__}: {exc}")
        return row
    row["status"] = result.status
    row["reason"] = result.reason
    turn = result.turns[0] if result.turns else None
    if turn is not None and turn.evaluation is not None:
        ev = turn.evaluation
        row.update(status=ev.status, speedup=ev.speedup, roofline=ev.roofline_fraction,
                   error=f"{ev.error.type}: {ev.error.message}" if ev.error else None, reason=ev.reason or row["reason"])
    stats = backend.compiler_stats()
    row.update(stats)
    row["wall_s"] = round(time.perf_counter() - began, 1)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "runs" / "compiler_coverage")
    parser.add_argument("--suite", type=Path, default=None, help="a folder of task files (default: npukernelbench)")
    parser.add_argument("--levels", default=None, help="comma-separated levels (default all)")
    parser.add_argument("--tasks", default=None, help="comma-separated substrings of task keys")
    parser.add_argument("--cases", type=int, default=None, help="first K cases per task (default all)")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--preset", default="ascend910b2")
    parser.add_argument("--report-only", action="store_true")
    parser.add_argument("--suite-source", default=None,
                        help="where the --suite files come from (a repository and commit), for the report")
    parser.add_argument("--results", type=Path, default=None,
                        help="also write the report as the compiler section of this doc (docs/results.md)")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    rows_path = args.out / "rows.jsonl"
    if not args.report_only:
        from sage.bench.tasks import SUITE_DIR, load_tasks

        tasks, skipped = load_tasks(args.suite or SUITE_DIR)
        tasks = [t for t in tasks if t.level is not None or args.suite is not None]
        if args.levels:
            keep = {int(x) for x in args.levels.split(",")}
            tasks = [t for t in tasks if t.level in keep]
        if args.tasks:
            subs = args.tasks.split(",")
            tasks = [t for t in tasks if any(s in t.key for s in subs)]
        done = {json.loads(line)["task"] for line in rows_path.read_text().splitlines()} if rows_path.exists() else set()
        todo = [(str(t.path), args.cases, args.preset) for t in tasks if t.key not in done]
        meta = {"command": " ".join(["python", "benchmarks/compiler_coverage.py", *sys.argv[1:]]),
                "cases": args.cases, "suite": str(args.suite or "npukernelbench"), "skipped": len(skipped),
                "source": args.suite_source, "commit": checkout_commit()}
        (args.out / "meta.json").write_text(json.dumps(meta, indent=2))
        began = time.perf_counter()
        # forkserver: a forked child of a process with torch's threads can deadlock
        pool = ProcessPoolExecutor(args.workers, mp_context=multiprocessing.get_context("forkserver")) \
            if args.workers > 1 else None
        with rows_path.open("a") as fh:
            for row in (pool.map(run_task, todo) if pool else map(run_task, todo)):
                row["commit"] = meta["commit"]      # a resumed run mixes rows of several commits
                fh.write(json.dumps(row) + "\n")
                fh.flush()
                print(f"[{time.perf_counter() - began:7.0f} s] {row['task']}: {row['status']} "
                      f"{_x(row.get('speedup'))} {(row.get('reason') or row.get('error') or '')[:120]}", flush=True)
    rows = [json.loads(line) for line in rows_path.read_text().splitlines()]
    if not args.report_only:
        from datetime import datetime, timezone

        meta = json.loads((args.out / "meta.json").read_text())
        meta["finished"] = datetime.now(timezone.utc).isoformat(timespec="minutes")
        (args.out / "meta.json").write_text(json.dumps(meta, indent=2))
    text = report(rows, json.loads((args.out / "meta.json").read_text()))
    (args.out / "report.md").write_text(text)
    print(text)
    if args.results is not None:
        write_section(args.results, text, json.loads((args.out / "meta.json").read_text()))
        print(f"wrote the compiler section of {args.results}")


def _commits(rows: list[dict]) -> str:
    """Which code measured the rows: one commit, or each commit with its row count."""
    counts = Counter(r.get("commit", "not recorded") for r in rows)
    if len(counts) == 1:
        return f"commit {next(iter(counts))}"
    return "rows from commits " + ", ".join(f"{c} ({n})" for c, n in counts.most_common())


def write_section(doc: Path, text: str, meta: dict) -> None:
    """Replace (or append) the marked compiler section of `doc`; the rest is kept as it is."""
    title = "" if meta.get("suite") == "npukernelbench" else f", on {meta.get('source') or meta.get('suite')}"
    cases = meta.get("cases")
    if cases:   # a sample says so in its heading (every case is the default)
        title += " (a sample: " + ("the first case" if cases == 1 else f"the first {cases} cases") + " of each task)"

    block = (f"{COMPILER_BEGIN}\n## The offline compiler, first answer per task{title}\n\n"
             "Written by `benchmarks/compiler_coverage.py --results docs/results.md` from its report "
             "(the first kernel the offline agent answers: the compiler with the default schedule search "
             "budget, no memory, no refinement turns; every kernel judged by the evaluation).\n\n"
             f"{text}{COMPILER_END}")
    old = doc.read_text(encoding="utf-8") if doc.exists() else ""
    start, end = old.find(COMPILER_BEGIN), old.find(COMPILER_END)
    new = old[:start] + block + old[end + len(COMPILER_END):] if 0 <= start < end else old.rstrip("\n") + "\n\n" + block + "\n"
    doc.write_text(new, encoding="utf-8")


def report(rows: list[dict], meta: dict) -> str:
    command, suite = meta["command"], meta["suite"]
    if suite != "npukernelbench" and not Path(suite).resolve().is_relative_to(ROOT):
        # a folder of this machine (a copy of public task files): named by where it comes from
        command, suite = command.replace(suite, "SUITE"), "SUITE"
    lines = [f"Command: `{command}`; cases: {'all' if meta['cases'] is None else meta['cases']}; "
             f"suite: {suite}" + (f" ({meta['source']})" if meta.get("source") else "")
             + f"; {_commits(rows)}; {meta.get('skipped', 0)} task files skipped by the "
             f"loader; last rows written {meta.get('finished', '-')} (the per-mode tables above "
             "come from their own run, dated in their header).", "",
             "| level | tasks | correct | faster than reference (of correct) | median speedup (correct) | "
             "median roofline (correct) | simulator runs (mean) |", "|---|---|---|---|---|---|---|"]
    levels = sorted({r.get("level") for r in rows}, key=lambda v: (v is None, v))
    for lv in levels + ["all"]:
        sel = rows if lv == "all" else [r for r in rows if r.get("level") == lv]
        ok = [r for r in sel if r["status"] == "correct"]
        fast = [r for r in ok if (r.get("speedup") or 0) > 1.0]
        sp = [r["speedup"] for r in ok if r.get("speedup")]
        rf = [r["roofline"] for r in ok if r.get("roofline") is not None]
        runs = [r.get("simulator_runs", 0) for r in sel]
        lines.append(f"| {lv} | {len(sel)} | {len(ok)} ({_pct(len(ok), len(sel))}) | {len(fast)} ({_pct(len(fast), len(ok))}) "
                     f"| {_x(statistics.median(sp)) if sp else '-'} | {f'{statistics.median(rf):.2f}' if rf else '-'} "
                     f"| {statistics.mean(runs) if runs else 0:.1f} |")
    lines += ["", "Failures by reason class:", "", "| class | tasks |", "|---|---|"]
    classes: dict[str, list[str]] = {}
    for r in rows:
        if r["status"] != "correct":
            classes.setdefault(classify(r), []).append(r["task"])
    for name, tasks in sorted(classes.items(), key=lambda kv: -len(kv[1])):
        lines.append(f"| {name} ({len(tasks)}) | {', '.join(sorted(tasks))} |")
    lines += ["", "Per task:", "", "| task | status | speedup | roofline | reason |", "|---|---|---|---|---|"]
    for r in sorted(rows, key=lambda r: r["task"]):
        why = (r.get("reason") or r.get("error") or "").replace("|", "/")[:140] if r["status"] != "correct" else ""
        roof = f"{r['roofline']:.2f}" if r.get("roofline") is not None else "-"
        lines.append(f"| {r['task']} | {r['status']} | {_x(r.get('speedup'))} | {roof} | {why} |")
    return "\n".join(lines) + "\n"


def _pct(a: int, b: int) -> str:
    return f"{100 * a / b:.0f}%" if b else "-"


def _x(v) -> str:
    return f"{v:.2f}x" if isinstance(v, (int, float)) else "-"


if __name__ == "__main__":
    main()
