"""The benchmark runner: which tasks, who solves them, where they run, what gets written.

A run evaluates every selected task once per epoch. Who writes the kernel is a `Solver`
(ready kernel files from a folder, or the agent); without a solver the run measures the
reference model alone (reference outputs on CPU + the torch_npu stand-in's time). Jobs
run on an `Executor` (this process, a local process pool, or Ray) and every finished task
is appended to `results.jsonl` at once: one row per task and attempt, exactly one of them
`final` per task and epoch. `--resume` skips the (task, epoch) pairs that have a final row.

Solvers must be picklable: they travel to the worker processes with their job.
"""

from __future__ import annotations

import json
import random
import re
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from sage.bench.evaluate import ReferenceRun, TaskEvaluation, evaluate_kernel, measure_reference
from sage.bench.executors import make_executor
from sage.bench.tasks import (ReferenceUnavailable, Skipped, Task, TaskLoadError, level_of, load_task,
                              load_tasks, suite_files)
from sage.npu.sandbox import Limits

RESULTS_FILE = "results.jsonl"
CONFIG_FILE = "run.json"


class Attempt(BaseModel):
    source: str | None = None
    evaluation: TaskEvaluation
    extra: dict[str, Any] = {}            # solver-specific: tokens, adopted ids, plan, ...


class SolveResult(BaseModel):
    attempts: list[Attempt] = []
    best: int | None = None               # index of the final attempt; None = let the runner choose
    extra: dict[str, Any] = {}


class Solver(Protocol):
    name: str

    def solve(self, task: Task, *, epoch: int, seed: int) -> SolveResult: ...


class KernelDirSolver(BaseModel):
    """Evaluates ready kernel files: DIR/<task key>.py (e.g. DIR/level1/10_layer_norm.py),
    else DIR/<task name>.py. A task without a file has no attempt (not executed)."""

    kernels: Path
    preset: str = "ascend910b2"
    cases: int | None = None
    limits: Limits | None = None
    name: str = "kernels"

    def kernel_file(self, task: Task) -> Path | None:
        for candidate in (self.kernels / f"{task.key}.py", self.kernels / f"{task.name}.py"):
            if candidate.is_file():
                return candidate
        return None

    def solve(self, task: Task, *, epoch: int, seed: int) -> SolveResult:
        path = self.kernel_file(task)
        if path is None:
            return SolveResult()
        evaluation = evaluate_kernel(task, path.read_text(encoding="utf-8", errors="replace"),
                                     preset=self.preset, cases=self.cases, limits=self.limits,
                                     filename=path.name)
        return SolveResult(attempts=[Attempt(source=str(path), evaluation=evaluation)], best=0)


class ResultRow(BaseModel):
    model_config = ConfigDict(ser_json_inf_nan="strings")

    task: str
    level: int | None = None
    tags: list[str] = []
    path: str = ""
    epoch: int = 0
    attempt: int = 0
    final: bool = True
    mode: Literal["kernel", "reference"] = "kernel"
    solver: str = ""
    status: str
    evaluation: TaskEvaluation | None = None
    reference: ReferenceRun | None = None
    source: str | None = None
    extra: dict[str, Any] = {}
    wall_s: float = 0.0
    finished_at: str = Field(default_factory=lambda: datetime.now(timezone.utc).isoformat(timespec="seconds"))


class Job(BaseModel):
    path: str
    epoch: int = 0
    seed: int = 0
    preset: str = "ascend910b2"
    cases: int | None = None
    solver: Any = None                    # a picklable Solver, or None for reference-only


class BenchConfig(BaseModel):
    """What a run evaluates and how; stored as run.json. Solver settings (the agent's model,
    memory mode, ablation arms) belong to the solver, which records them in its rows' `extra`."""

    target: str = "npukernelbench"        # the suite, or a task file / folder
    levels: list[int] | None = None
    ops: list[str] | None = None
    cases: int | None = None
    workers: int = 2
    executor: Literal["local", "ray"] = "local"
    ray_address: str | None = None
    preset: str = "ascend910b2"
    out: Path
    resume: bool = False
    epochs: int = 1
    seed: int = 0


class BenchRun(BaseModel):
    out: Path
    rows: list[ResultRow]                 # every row in results.jsonl after the run
    ran: int                              # jobs run now (not resumed)
    resumed: int                          # (task, epoch) pairs skipped because finished
    wall_s: float


def collect_tasks(target: str, levels: list[int] | None = None,
                  ops: list[str] | None = None) -> tuple[list[Task], list[Skipped]]:
    """The tasks of the suite ("npukernelbench") or of a path, filtered by level and name."""
    if target == "npukernelbench":
        tasks, skipped = [], []
        for f in suite_files():
            t, s = load_tasks(f, check_inputs=False)
            tasks += t
            skipped += s
    else:
        path = Path(target)
        if not path.exists():
            raise TaskLoadError(path, "no such file or folder (use 'npukernelbench' for the suite)")
        tasks, skipped = load_tasks(path, check_inputs=False)
    if levels is not None:
        tasks = [t for t in tasks if t.level in levels]
        skipped = [s for s in skipped if s.level in levels]
    if ops:
        wanted = set(ops)
        tasks = [t for t in tasks if wanted & _names(t.name, t.key)]
        skipped = [s for s in skipped if wanted & _names(s.name, f"level{s.level}/{s.name}")]
    return tasks, skipped


def run_job(job: Job) -> list[ResultRow]:
    """One task, one epoch: the rows it produces. Runs in a worker process."""
    start = time.perf_counter()
    path = Path(job.path)
    try:
        task = load_task(path, check_inputs=False)
    except (TaskLoadError, ReferenceUnavailable) as exc:
        kind = "reference_unavailable" if isinstance(exc, ReferenceUnavailable) else "reference_error"
        reason = exc.reason if isinstance(exc, ReferenceUnavailable) else exc.problem
        key, level = _key(path), level_of(path)
        if job.solver is None:
            return [ResultRow(task=key, level=level, path=str(path), epoch=job.epoch, mode="reference",
                              solver="reference", status=kind, reference=ReferenceRun(status=kind, reason=reason))]
        return [ResultRow(task=key, level=level, path=str(path), epoch=job.epoch, solver=job.solver.name,
                          status=kind, evaluation=TaskEvaluation(task=key, level=level, status=kind, reason=reason))]
    head = dict(task=task.key, level=task.level, tags=task.tags, path=str(task.path), epoch=job.epoch)
    if job.solver is None:
        ref = measure_reference(task, job.preset, job.cases)
        return [ResultRow(**head, mode="reference", solver="reference", status=ref.status, reference=ref,
                          wall_s=round(time.perf_counter() - start, 3))]
    result: SolveResult = job.solver.solve(task, epoch=job.epoch, seed=job.seed)
    wall = round(time.perf_counter() - start, 3)
    if not result.attempts:
        return [ResultRow(**head, solver=job.solver.name, status="no_kernel", extra=result.extra, wall_s=wall,
                          evaluation=TaskEvaluation(task=task.key, level=task.level, tags=task.tags,
                                                    status="no_kernel"))]
    best = result.best if result.best is not None else choose_best(result.attempts)
    return [ResultRow(**head, attempt=i, final=i == best, solver=job.solver.name, status=a.evaluation.status,
                      evaluation=a.evaluation, source=a.source, extra={**result.extra, **a.extra}, wall_s=wall)
            for i, a in enumerate(result.attempts)]


def task_order(paths: list[str], seed: int) -> list[str]:
    """The order a run submits its tasks in, the same in every epoch: shuffled by `seed` so a
    learning solver does not always meet a level's easy tasks first, and fixed by it so
    runs that differ only in the solver (the memory ablation) see the tasks alike."""
    ordered = sorted(paths)
    random.Random(seed).shuffle(ordered)
    return ordered


def choose_best(attempts: list[Attempt]) -> int:
    """The fastest correct attempt, else the last one."""
    correct = [(a.evaluation.speedup or 0.0, i) for i, a in enumerate(attempts) if a.evaluation.correct]
    return max(correct)[1] if correct else len(attempts) - 1


def run_bench(config: BenchConfig, solver: Solver | None,
              on_row: Callable[[ResultRow], None] | None = None,
              on_start: Callable[[int], None] | None = None) -> BenchRun:
    """Runs (or resumes) a benchmark into `config.out`. `on_start(total)` and `on_row(row)`
    let the caller draw progress."""
    start = time.perf_counter()
    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    results = out / RESULTS_FILE
    if config.resume:
        check_resumable(out, config)
    existing = read_rows(results) if config.resume else []
    # Rewritten from the rows that parsed, so a line torn by a crash does not end up
    # in the middle of the file once new rows are appended.
    results.write_text("".join(r.model_dump_json() + "\n" for r in existing), encoding="utf-8")
    (out / CONFIG_FILE).write_text(config.model_dump_json(indent=2) + "\n")
    finished = {(r.task, r.epoch) for r in existing if r.final}

    tasks, skipped = collect_tasks(config.target, config.levels, config.ops)
    paths = task_order([str(t.path) for t in tasks] + [s.path for s in skipped], config.seed)
    jobs_by_epoch = [[Job(path=p, epoch=e, seed=config.seed + e, preset=config.preset, cases=config.cases,
                          solver=solver) for p in paths if (_key(Path(p)), e) not in finished]
                     for e in range(config.epochs)]
    total = sum(len(j) for j in jobs_by_epoch)
    if on_start:
        on_start(total)
    rows = list(existing)
    executor = make_executor(config.executor, config.workers, ray_address=config.ray_address)
    try:
        with results.open("a", encoding="utf-8") as fh:
            # Epochs run one after the other: a learning solver must see epoch e finished
            # before it starts e + 1.
            for jobs in jobs_by_epoch:
                for job_rows in executor.map(run_job, jobs):
                    for row in job_rows:
                        fh.write(row.model_dump_json() + "\n")
                        rows.append(row)
                    fh.flush()
                    if on_row:
                        on_row(next((r for r in job_rows if r.final), job_rows[-1]))
    finally:
        executor.close()
    return BenchRun(out=out, rows=rows, ran=total, resumed=len(finished),
                    wall_s=round(time.perf_counter() - start, 3))


class ResultsCorrupt(ValueError):
    """A line of results.jsonl other than the last does not parse."""


class ResumeMismatch(ValueError):
    """--resume with options that would mix incomparable rows in one results.jsonl."""


# Options that change what a row means: a resumed run must keep them.
_RESUME_KEYS = ("target", "preset", "cases")


def check_resumable(out: Path, config: BenchConfig) -> None:
    stored_path = Path(out) / CONFIG_FILE
    if not stored_path.exists():
        return
    stored = json.loads(stored_path.read_text())
    current = json.loads(config.model_dump_json())
    for key in _RESUME_KEYS:
        if key in stored and stored[key] != current[key]:
            raise ResumeMismatch(f"{out} was run with {key}={stored[key]!r}, not {current[key]!r}: "
                                 f"resume with the same {key} or use another --out")


def read_rows(path: Path) -> list[ResultRow]:
    """Rows of a results.jsonl; a torn last line (a crash mid-write) is ignored."""
    if not Path(path).exists():
        return []
    rows = []
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            rows.append(ResultRow.model_validate_json(line))
        except ValueError as exc:
            if i == len(lines) - 1:
                break
            raise ResultsCorrupt(f"{path}, line {i + 1}: not a result row "
                                 f"({str(exc).splitlines()[0]})") from exc
    return rows


def final_rows(rows: list[ResultRow], epoch: int | None = None) -> list[ResultRow]:
    """The final row per task, of `epoch` (default: the last epoch present)."""
    if not rows:
        return []
    epoch = max(r.epoch for r in rows) if epoch is None else epoch
    latest: dict[str, ResultRow] = {}
    for r in rows:
        if r.final and r.epoch == epoch:
            latest[r.task] = r
    return list(latest.values())


def default_out_dir(runs_dir: Path = Path("runs")) -> Path:
    return runs_dir / datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")


def _names(name: str, key: str) -> set[str]:
    return {name, key, re.sub(r"^\d+_", "", name)}


def _key(path: Path) -> str:
    level = level_of(path)
    return f"level{level}/{path.stem}" if level is not None else path.stem


__all__ = ["Attempt", "BenchConfig", "BenchRun", "Job", "KernelDirSolver", "ReferenceRun", "ResultRow",
           "ResultsCorrupt", "ResumeMismatch", "SolveResult", "Solver", "check_resumable", "choose_best",
           "collect_tasks", "default_out_dir", "final_rows", "read_rows", "run_bench", "run_job", "task_order"]
