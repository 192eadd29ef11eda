"""The offline agent on every folder of MultiKernelBench's `reference/`, and what loads, what
is correct, what is faster, and what is over the input budget, per folder.

    git clone https://github.com/wzzll123/MultiKernelBench /tmp/mkb && git -C /tmp/mkb checkout 460a972
    .venv/bin/python benchmarks/public_folders.py /tmp/mkb --out runs/public_folders --doc docs/results.md
    .venv/bin/python benchmarks/public_folders.py /tmp/mkb --folders broadcast,loss --json
    .venv/bin/python benchmarks/public_folders.py /tmp/mkb --out runs/public_folders --report-only --doc docs/results.md

Each folder is one `sage bench FOLDER` run (sage.bench.runner.run_bench) with the offline
agent's first answer (no model, no memory, no refinement turn, every case of each task
unless --cases K samples the first K) into OUT/<folder>/, resumable: a run stopped part-way goes on
where it stopped. The npukernelbench_level* folders are the NPUKernelBench format (cases in
a JSON file beside each task), the others KernelBench's (one `get_inputs()`); both load
unchanged. A folder's files that need an accelerator (`import torch_npu`) load as
`reference_unavailable` and are counted, not run.

The input budget is fixed (--max-input-gb, 4 GB by default) rather than half of this
machine's free memory, so that the table does not depend on the machine: a case above it is
`unsupported` with its size and never made.

`--doc` rewrites the rows of the folders whose runs --out holds and keeps every other row
(run folders are not kept in the repository): data/public_folders.json beside the doc holds
each folder's last summary, and the "by reason" line counts the folders whose reasons it has.

Columns: files (task files; helper modules excluded; "(N not run)": a run stopped part-way left
N of them without a row), loaded (the reference ran on the CPU),
correct (every judged case of the kernel within the rule of docs/evaluation.md), faster
(correct and faster than the modelled torch_npu reference end to end), over budget (a case
over the input budget), torch_npu (the reference needs an accelerator), sage at (the sage
commit the folder's rows were made at; two when a stopped run was resumed at a later commit).
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.provenance import checkout_commit  # noqa: E402
from benchmarks.suite_summary import place_block  # noqa: E402
from sage.bench.reasons import by_reason, not_correct  # noqa: E402
from sage.bench.runner import RESULTS_FILE, BenchConfig, final_rows, read_rows, run_bench  # noqa: E402

BEGIN, END = "<!-- public-folders:begin -->", "<!-- public-folders:end -->"
PINNED = "460a972"
REPOSITORY = "https://github.com/wzzll123/MultiKernelBench"
NOT_LOADED = ("reference_unavailable", "reference_error")
DATA = Path("data") / "public_folders.json"   # beside the doc: every folder's last summary
RUN_INFO = "run_info.json"   # the sage commit a folder's rows were made at (folders may be run at different commits)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkout", type=Path, help="a MultiKernelBench checkout (its reference/ folder is run)")
    parser.add_argument("--out", type=Path, default=ROOT / "runs" / "public_folders")
    parser.add_argument("--folders", default=None, help="comma-separated folder names (default: every folder)")
    parser.add_argument("--cases", type=int, default=None,
                        help="sample the first K cases of each task (default: every case)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--max-input-gb", type=float, default=4.0)
    parser.add_argument("--task-timeout", type=float, default=300.0, help="seconds per task (default 300)")
    parser.add_argument("--commit", default=PINNED, help=f"the checkout's commit, for the doc (default {PINNED})")
    parser.add_argument("--report-only", action="store_true", help="summarise the runs in --out, run nothing")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    parser.add_argument("--doc", type=Path, default=None, help="write the table between its markers in this doc")
    args = parser.parse_args()
    reference = args.checkout / "reference"
    if not reference.is_dir():
        parser.error(f"{reference}: no such folder (give a MultiKernelBench checkout)")
    folders = sorted(p for p in reference.iterdir() if p.is_dir() and not p.name.startswith((".", "_")))
    if args.folders:
        wanted = set(args.folders.split(","))
        folders = [f for f in folders if f.name in wanted]
    began = time.perf_counter()
    if not args.report_only:
        for folder in folders:
            run_folder(folder, args)
    summary = {f.name: folder_summary(args.out / f.name, f) for f in folders
               if (args.out / f.name / RESULTS_FILE).exists()}
    unrun = [f.name for f in folders if f.name not in summary]
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print(markdown(summary, args, time.perf_counter() - began, unrun))
    if args.doc is not None:
        # folders this --out has no run of keep the rows the doc had (run folders are not kept
        # in the repository; each row names the commit it was made at)
        kept = {k: v for k, v in _kept_rows(args.doc).items() if k not in summary}
        merged = dict(sorted({**kept, **summary}.items()))
        data = args.doc.parent / DATA
        data.parent.mkdir(parents=True, exist_ok=True)
        data.write_text(json.dumps(merged, indent=1) + "\n")
        unrun = [f.name for f in sorted(p for p in reference.iterdir() if p.is_dir() and not p.name.startswith((".", "_")))
                 if f.name not in merged]
        place_block(args.doc, markdown(merged, args, unrun=unrun), BEGIN, END)
        print(f"wrote the public-folders block of {args.doc} ({len(summary)} folder(s) from this run, "
              f"{len(kept)} kept from the doc)", file=sys.stderr)


def _kept_rows(doc: Path) -> dict[str, dict]:
    """Every folder's last summary: docs/data/public_folders.json, written with the doc, or
    (before it existed) the doc's own rows."""
    data = doc.parent / DATA
    return json.loads(data.read_text()) if data.exists() else _doc_rows(doc)


def _doc_rows(doc: Path) -> dict[str, dict]:
    """The folder rows of the doc's block, as summaries (their reasons are not in the table:
    a kept row adds none to the "by reason" line, which says so)."""
    text = doc.read_text() if doc.exists() else ""
    block = text[text.find(BEGIN):text.find(END)] if BEGIN in text and END in text else ""
    rows = {}
    for line in block.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 8 or not cells[1][:1].isdigit() or cells[0] in ("all", "folder"):
            continue
        files, _, rest = cells[1].partition(" ")
        unrun = int(rest.strip("()").split()[0]) if rest else 0
        commits = [c.strip() for c in cells[7].split(",") if c.strip() and c.strip() != "?"]
        rows[cells[0]] = {"files": int(files), "unrun": unrun, "loaded": int(cells[2]), "correct": int(cells[3]),
                          "faster": int(cells[4]), "over_budget": ["?"] * int(cells[5]), "torch_npu": int(cells[6]),
                          "by_reason": None, "sage_commits": commits, "task_timeout_s": None, "from_doc": True}
    limits = re.search(r"Run with another limit per task: (.*)\.", block)
    for name, secs in re.findall(r"(\S+) \((\d+) s\)", limits.group(1) if limits else ""):
        if name in rows:
            rows[name]["task_timeout_s"] = float(secs)
    over = re.search(r"Over the input budget: (.*)\.", block)
    for task in (over.group(1).split(", ") if over else []):
        folder = next((n for n in rows if n.endswith(task.split("/")[0]) and "?" in rows[n]["over_budget"]), None)
        if folder is not None:
            rows[folder]["over_budget"][rows[folder]["over_budget"].index("?")] = task
    return rows


def run_folder(folder: Path, args: argparse.Namespace) -> None:
    from sage.agent.bench_solver import AgentSolver

    out = args.out / folder.name
    config = BenchConfig(target=str(folder), out=out, cases=args.cases, workers=args.workers,
                         resume=(out / RESULTS_FILE).exists(), task_timeout_s=args.task_timeout,
                         input_budget=int(args.max_input_gb * (1 << 30)))
    solver = AgentSolver(model=None, memory_mode="none", iterations=0, preset=config.preset, cases=config.cases,
                         memory_url=f"sqlite:///{out / 'memory.db'}")
    out.mkdir(parents=True, exist_ok=True)
    commits = _run_commits(out)
    if checkout_commit() not in commits or _run_timeout(out) != args.task_timeout:
        commits = commits if checkout_commit() in commits else [*commits, checkout_commit()]
        (out / RUN_INFO).write_text(json.dumps({**_run_info(out), "sage_commits": commits,
                                                 "task_timeout_s": args.task_timeout}))
    began = time.perf_counter()
    run = run_bench(config, solver)
    spent = time.perf_counter() - began
    info = _run_info(out)
    # the folder's wall time, over every invocation that ran part of it (a resumed run adds)
    (out / RUN_INFO).write_text(json.dumps({**info, "wall_s": round(info.get("wall_s", 0.0) + spent, 1)}))
    print(f"[{spent:6.0f} s] {folder.name}: {run.ran} task(s) run, {run.resumed} resumed",
          file=sys.stderr, flush=True)


def folder_summary(out: Path, folder: Path | None = None) -> dict:
    """The folder's counts from its rows; `unrun` counts the task files of `folder` (the
    checkout's) that have no row yet, so a run stopped part-way is not read as complete."""
    from sage.bench.tasks import is_helper_module, task_files

    rows = final_rows(read_rows(out / RESULTS_FILE))
    unrun = 0
    if folder is not None:
        names = {r.task.rsplit("/", 1)[-1] for r in rows}   # level folders name tasks "level0/1_add"
        unrun = sum(1 for f in task_files(folder) if f.stem not in names and not is_helper_module(f))
    loaded = [r for r in rows if r.status not in NOT_LOADED]
    correct = [r for r in rows if r.status == "correct"]
    faster = [r for r in correct if (r.evaluation.speedup or 0) > 1]
    over = [r.task for r in rows if _over_budget(r)]
    missed = not_correct(rows)
    return {"files": len(rows) + unrun, "unrun": unrun, "loaded": len(loaded), "correct": len(correct), "faster": len(faster),
            "over_budget": over, "torch_npu": sum(r.status == "reference_unavailable" for r in rows),
            "by_reason": [{"reason": g.kind, "count": g.count} for g in by_reason(missed)],
            "not_correct": [m.model_dump() for m in missed], "sage_commits": _run_commits(out),
            "task_timeout_s": _run_timeout(out), "seconds": time_split(rows, _run_info(out).get("wall_s"))}


# issue 31's split of the wall time: the job outside its evaluation (loading the task,
# tracing, compiling, the schedule search's simulator runs) and the evaluation's own parts
SPLIT = ("compile", "reference", "time_model", "simulate", "check")


def time_split(rows: list, wall_s: float | None) -> dict | None:  # noqa: ANN001 - ResultRows
    """Seconds of the folder's tasks by part, summed over its rows (with two workers, about
    twice the wall time), those stopped at the limit counted apart; None when no row has the
    split (rows made before evaluations recorded it)."""
    judged = [r for r in rows if r.evaluation is not None and r.evaluation.split is not None]
    if not judged:
        return None
    out = dict.fromkeys(SPLIT, 0.0)
    for r in judged:
        out["compile"] += max(r.wall_s - r.evaluation.wall_s, 0.0)
        for part in SPLIT[1:]:
            out[part] += getattr(r.evaluation.split, part)
    split_rows = {id(r) for r in judged}
    out["unsplit"] = sum(r.wall_s for r in rows if id(r) not in split_rows)    # no kernel: the compile's refusal
    out["timeouts"] = sum(1 for r in rows if r.status == "timeout")
    out["wall"] = wall_s
    return {k: round(v, 1) if isinstance(v, float) else v for k, v in out.items()}


def _run_info(out: Path) -> dict:
    info = out / RUN_INFO
    return json.loads(info.read_text()) if info.exists() else {}


def _run_timeout(out: Path) -> float | None:
    """The limit per task a folder was run with (None: not recorded, runs before it was)."""
    return _run_info(out).get("task_timeout_s")


def _run_commits(out: Path) -> list[str]:
    """The sage commits a folder's rows were made at (more than one when a run was resumed later)."""
    return _run_info(out).get("sage_commits", [])


def _over_budget(row) -> bool:  # noqa: ANN001 - a ResultRow
    ev = row.evaluation
    texts = [ev.reason or ""] + [c.unsupported or "" for c in ev.cases] if ev is not None else []
    return any("input budget" in t or "needs more than" in t for t in texts)


def markdown(summary: dict, args: argparse.Namespace, wall_s: float | None = None,
             unrun: list[str] | None = None) -> str:
    command = "python " + " ".join(shlex.quote(a) for a in ["benchmarks/public_folders.py", "CHECKOUT",
                                                            *_options(args)])
    lines = [
        "## The offline agent on every public folder" + _sampled(args.cases),
        "",
        f"Written by `{command}`, CHECKOUT being [MultiKernelBench]({REPOSITORY}) at commit {args.commit}: each "
        "folder of its `reference/` run with `sage bench FOLDER` by the offline agent's first answer (no model, no "
        f"memory, no refinement turn), {_cases(args.cases)}, an input budget of {args.max_input_gb:g} GB and "
        f"{args.task_timeout:g} s per task. The columns are defined in the script's docstring; a task that is not "
        "correct has its reason in the run's report.md, and the kinds are counted below the table.",
        "",
        "| folder | files | loaded | correct | faster | over budget | torch_npu | sage at |",
        "|---|---|---|---|---|---|---|---|",
    ]
    totals = dict.fromkeys(("files", "loaded", "correct", "faster", "over", "npu"), 0)
    for name, s in summary.items():
        lines.append(f"| {name} | {s['files']}{_unrun(s)} | {s['loaded']} | {s['correct']} | {s['faster']} | "
                     f"{len(s['over_budget'])} | {s['torch_npu']} | {', '.join(s['sage_commits']) or '?'} |")
        for key, value in (("files", s["files"]), ("loaded", s["loaded"]), ("correct", s["correct"]),
                           ("faster", s["faster"]), ("over", len(s["over_budget"])), ("npu", s["torch_npu"])):
            totals[key] += value
    lines.append(f"| all | {totals['files']} | {totals['loaded']} | {totals['correct']} | {totals['faster']} | "
                 f"{totals['over']} | {totals['npu']} | |")
    kinds: dict[str, int] = {}
    for s in summary.values():
        for g in s["by_reason"] or []:
            kinds[g["reason"]] = kinds.get(g["reason"], 0) + g["count"]
    kept = [name for name, s in summary.items() if s.get("by_reason") is None]
    scope = "over all folders" if not kept else (
        f"over the folders with recorded reasons ({len(kept)} rows kept from an earlier table have theirs only in "
        "their own runs' report.md)")
    found = ", ".join(f"{k} ({n})" for k, n in sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0]))) or "none"
    lines += ["", f"Not correct, by reason, {scope}: {found}."]
    over = [t for s in summary.values() for t in s["over_budget"] if t != "?"]
    if over:
        lines += ["", f"Over the input budget: {', '.join(over)}."]
    other = [f"{name} ({s['task_timeout_s']:g} s)" for name, s in summary.items()
             if s.get("task_timeout_s") not in (None, args.task_timeout)]
    if other:
        lines += ["", f"Run with another limit per task: {', '.join(other)}."]
    if unrun:
        lines += ["", f"Folders not run yet (no row): {', '.join(unrun)}."]
    timed = {name: s["seconds"] for name, s in summary.items() if s.get("seconds")}
    if timed:
        lines += ["", "Where the time went, in minutes (the tasks' own times summed over the workers, so about "
                  f"{args.workers} times the wall time; compile: the job outside its evaluation, with the schedule "
                  "search's simulator runs; no kernel: jobs the compiler refused; a task stopped at the limit "
                  "is counted apart):", "",
                  "| folder | wall | compile | reference | time model | simulate | check | no kernel | stopped |",
                  "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for name, t in timed.items():
            wall = f"{t['wall'] / 60:.1f}" if t.get("wall") is not None else "?"
            lines.append(f"| {name} | {wall} | " + " | ".join(f"{t[k] / 60:.1f}" for k in (*SPLIT, "unsplit"))
                         + f" | {t['timeouts']} |")
    if wall_s is not None:
        lines += ["", f"({wall_s / 60:.1f} min for this invocation.)"]
    return "\n".join(lines)


def _unrun(s: dict) -> str:
    """A folder whose run stopped part-way says how many of its files have no row."""
    return f" ({s['unrun']} not run)" if s.get("unrun") else ""


def _options(args: argparse.Namespace) -> list[str]:
    options = [*(["--cases", str(args.cases)] if args.cases is not None else []), "--workers", str(args.workers), "--max-input-gb", f"{args.max_input_gb:g}",
               "--task-timeout", f"{args.task_timeout:g}", "--commit", args.commit]
    return [*options, *(["--folders", args.folders] if args.folders else []), "--doc", "docs/results.md"]


def _sampled(cases: int | None) -> str:
    """A heading's note when the figures are a sample of each task's cases."""
    return "" if cases is None else f" (a sample: the first {cases} case{'s' if cases != 1 else ''} of each task)"


def _cases(cases: int | None) -> str:
    return "every case of each task" if cases is None else (
        "the first case of each task" if cases == 1 else f"the first {cases} cases of each task")


if __name__ == "__main__":
    main()
