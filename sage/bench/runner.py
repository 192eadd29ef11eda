"""The benchmark runner: which tasks, who solves them, where they run, what gets written.

A run evaluates every selected task once per epoch. Who writes the kernel is a `Solver`
(ready kernel files from a folder, or the agent); without a solver the run measures the
reference model alone (reference outputs on CPU + the torch_npu stand-in's time). Jobs
run on an `Executor` (worker processes on this machine, or Ray) and every finished task
is appended to `results.jsonl` at once (flushed to disk): one row per task and attempt,
exactly one of them `final` per task and epoch. `--resume` skips the (task, epoch) pairs
that have a final row.

Helper modules in a task folder (Python files that define no task, see
`tasks.is_helper_module`) are left out of the jobs. A run never falls over. Task files are imported only in the workers; a job that raises,
kills its worker or passes the per-task deadline (`task_timeout_s`) becomes its task's
row with status `error`, `crashed` or `timeout` and the reason, and the run goes on.

Every job has a key, (run id, epoch, task), that stays the same when the run resumes. A
learning solver ties its memory episode to it, so a job whose episode was stored but whose
row was lost (the run killed in between) is not learned twice when it runs again.

Solvers must be picklable: they travel to the worker processes with their job.

Every row names the results schema it was written with (`schema_version`; a row without one
is version 1). Version 2 gives each case three times, kernel_us, device_us and end_to_end_us
(docs/evaluation.md), where version 1 had time_us and a device_us that summed the launches'
busy times; `--resume` refuses a folder whose rows are of another version, since the two
cannot be read as one run.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, model_validator
from pydantic_core import PydanticSerializationError

from sage import __version__
from sage.bench.evaluate import Status, TaskEvaluation, evaluate_kernel, nothing_to_judge, reference_fails_everywhere
from sage.bench.reference_run import ReferenceRun, measure_reference, merged_reference
from sage.bench.executors import TaskCrash, make_executor
from sage.bench.input_size import InputsTooLarge, default_budget_bytes
from sage.bench.row_size import fit_row
from sage.bench.selection import (collect_tasks, default_task_timeout, job_key, select_task_files, task_key,
                                  task_order)
from sage.bench.tasks import ReferenceUnavailable, Task, TaskLoadError, is_helper_module, level_of, load_task
from sage.npu.sandbox import Limits
from sage.text import ERROR_CHARS, clean, json_safe

RESULTS_FILE = "results.jsonl"
CONFIG_FILE = "run.json"
# Row status of a job that produced no result, by how it ended.
CRASH_STATUS = {"raised": "error", "crashed": "crashed", "timeout": "timeout"}
NOT_JUDGED = "not_judged"        # a task the solver could not start: left for --resume
RESULTS_SCHEMA = 2               # the row format (module docstring); rows without the field are version 1


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
    max_attempts: int                     # kernels judged per task at most (sets the default deadline)

    def solve(self, task: Task, *, epoch: int, seed: int, job_key: str | None = None) -> SolveResult: ...


class KernelDirSolver(BaseModel):
    """Evaluates ready kernel files: DIR/<task key>.py (e.g. DIR/level1/10_layer_norm.py),
    else DIR/<task name>.py. A task without a file has no attempt (not executed)."""

    kernels: Path
    preset: str = "ascend910b2"
    cases: int | list[int] | None = None   # the first K cases, or these case indices
    limits: Limits | None = None
    name: str = "kernels"
    max_attempts: int = 1

    def kernel_file(self, task: Task) -> Path | None:
        for candidate in (self.kernels / f"{task.key}.py", self.kernels / f"{task.name}.py"):
            if candidate.is_file():
                return candidate
        return None

    def solve(self, task: Task, *, epoch: int, seed: int, job_key: str | None = None) -> SolveResult:
        path = self.kernel_file(task)
        if path is None:
            return SolveResult(extra={"reason": f"no kernel file {task.key}.py (nor {task.name}.py) in {self.kernels}"})
        evaluation = evaluate_kernel(task, path.read_text(encoding="utf-8", errors="replace"),
                                     preset=self.preset, cases=self.cases, limits=self.limits,
                                     filename=path.name)
        return SolveResult(attempts=[Attempt(source=str(path), evaluation=evaluation)], best=0)


class ResultRow(BaseModel):
    model_config = ConfigDict(ser_json_inf_nan="strings")

    schema_version: int = RESULTS_SCHEMA
    task: str
    level: int | None = None
    tags: list[str] = []
    path: str = ""
    epoch: int = 0
    attempt: int = 0
    final: bool = True
    mode: Literal["kernel", "reference"] = "kernel"
    solver: str = ""
    # Replaying a row: `--seed <seed>` makes the same case inputs (Task.seed), on `preset`,
    # with this sage. None in rows written before they were recorded.
    seed: int | None = None
    preset: str | None = None
    sage_version: str | None = None
    status: str
    evaluation: TaskEvaluation | None = None
    reference: ReferenceRun | None = None
    source: str | None = None
    extra: dict[str, Any] = {}
    wall_s: float = 0.0
    finished_at: str = Field(default_factory=lambda: datetime.now(timezone.utc).isoformat(timespec="seconds"))

    @model_validator(mode="before")
    @classmethod
    def _stored_version(cls, data: Any, info: ValidationInfo) -> Any:
        # A stored row without the field was written by results schema 1; a row made now is this version.
        if info.context and info.context.get("stored") and isinstance(data, dict) and "schema_version" not in data:
            return {**data, "schema_version": 1}
        return data


class Job(BaseModel):
    path: str
    epoch: int = 0
    seed: int = 0
    key: str | None = None                # stable across resumes, see job_key()
    preset: str = "ascend910b2"
    cases: int | list[int] | None = None
    solver: Any = None                    # a picklable Solver, or None for reference-only
    input_budget: int | None = None       # bytes a task's inputs may take (sage.bench.input_size)
    detail: bool = False                  # reference-only: keep the per-call rows (moved to OUT/detail/)
    shard: tuple[int, int] | None = None  # reference-only: (k, n): every n-th case from the k-th


class BenchConfig(BaseModel):
    """What a run evaluates and how; stored as run.json. Solver settings (the agent's model,
    memory mode, ablation arms) belong to the solver, which records them in its rows' `extra`."""

    target: str = "npukernelbench"        # the suite, or a task file / folder
    levels: list[int] | None = None
    ops: list[str] | None = None
    cases: int | list[int] | None = None  # the first K cases of each task, or these case indices
    workers: int = 2
    executor: Literal["local", "ray", "inline"] = "local"   # inline: tests and debugging only
    ray_address: str | None = None
    preset: str = "ascend910b2"
    out: Path
    resume: bool = False
    epochs: int = 1
    seed: int = 0
    task_timeout_s: float | None = Field(None, gt=0, description="per-task deadline; None: default_task_timeout")
    input_budget: int | None = Field(None, description="bytes a task's inputs may take; None: half the memory "
                                                       "available when the run starts")
    detail: bool = False                  # reference-only: per-call rows of the reference, in OUT/detail/
    run_id: str | None = None             # set by run_bench, kept by --resume
    sage_version: str = __version__       # the sage that wrote the run (run.json)


class BenchRun(BaseModel):
    out: Path
    rows: list[ResultRow]                 # every row in results.jsonl after the run
    ran: int                              # jobs run now (not resumed)
    resumed: int                          # (task, epoch) pairs skipped because finished
    wall_s: float


def run_job(job: Job) -> list[ResultRow]:
    """One task, one epoch: the rows it produces. Runs in a worker process."""
    start = time.perf_counter()
    path = Path(job.path)
    try:
        # Inputs checked before any solver sees the task: a broken case file is the task's
        # reference_error, never a "no kernel" or a kernel failure. The reference alone needs
        # no inputs made up front (it times sized ones where it can: sage.bench.reference_run).
        task = load_task(path, check_inputs=job.solver is not None, seed=job.seed, input_budget=job.input_budget)
    except ReferenceUnavailable as exc:
        return [failure_row(job, "reference_unavailable", "reference_unavailable", exc.reason)]
    except TaskLoadError as exc:
        return [failure_row(job, "reference_error", "reference_error", exc.problem)]
    except InputsTooLarge as exc:
        return [failure_row(job, "unsupported", "unsupported", exc.reason)]
    head = dict(task=task.key, level=task.level, tags=task.tags, path=str(task.path), epoch=job.epoch)
    if job.solver is not None and (why := nothing_to_judge(task, job.cases)) is not None:
        # No case a kernel can be judged on: the task leaves the metrics, no kernel is asked for.
        return [failure_row(job, "unsupported", "unsupported", f"no case can be judged: {why}")]
    if job.solver is None:
        ref = measure_reference(task, job.preset, job.cases, detail=job.detail, shard=job.shard)
        return [ResultRow(**head, mode="reference", solver="reference", status=ref.status, reference=ref,
                          wall_s=round(time.perf_counter() - start, 3))]
    result: SolveResult = job.solver.solve(task, epoch=job.epoch, seed=job.seed, job_key=job.key)
    wall = round(time.perf_counter() - start, 3)
    if not result.attempts and result.extra.get("unjudged"):
        # The solver could not start (its endpoint failed, its budget ran out): not final,
        # so metrics leave the task out and --resume runs it again.
        return [ResultRow(**head, solver=job.solver.name, status=NOT_JUDGED, final=False, extra=result.extra,
                          wall_s=wall)]
    if not result.attempts and (why := reference_fails_everywhere(task, job.cases)) is not None:
        # no kernel could be correct: the task leaves the metrics, as with a kernel judged
        return [failure_row(job, "reference_error", "reference_error", f"the reference raises on every case: {why}")]
    if not result.attempts:
        reason = result.extra.get("reason") or result.extra.get("error") or "the solver answered no kernel"
        return [ResultRow(**head, solver=job.solver.name, status="no_kernel", extra=result.extra, wall_s=wall,
                          evaluation=TaskEvaluation(task=task.key, level=task.level, tags=task.tags,
                                                    status="no_kernel", reason=clean(reason, ERROR_CHARS)))]
    best = result.best if result.best is not None else choose_best(result.attempts)
    return [ResultRow(**head, attempt=i, final=i == best, solver=job.solver.name, status=a.evaluation.status,
                      evaluation=a.evaluation, source=a.source, extra={**result.extra, **a.extra}, wall_s=wall)
            for i, a in enumerate(result.attempts)]


def merged_reference_row(parts: list[ResultRow]) -> ResultRow:
    """The one row of a reference-only task measured in shards (each a row of its cases)."""
    refs = [p.reference or ReferenceRun(status="reference_error", reason=p.status) for p in parts]
    merged = merged_reference(refs)
    failed = next((p for p in parts if p.status not in ("reference_ok", merged.status)), None)
    first = parts[0]
    return first.model_copy(update={
        "status": failed.status if failed is not None else merged.status, "reference": merged,
        "wall_s": round(max(p.wall_s for p in parts), 3),
        "extra": {**first.extra, "shards": len(parts)}})


def failure_row(job: Job, status: str, evaluation_status: Status, reason: str) -> ResultRow:
    """The row of a job that judged nothing: a task file that does not load, or a job that
    raised, crashed or timed out (`status`), with the one-line reason."""
    path = Path(job.path)
    key, level = task_key(path), level_of(path)
    head = dict(task=key, level=level, path=str(path), epoch=job.epoch, status=status)
    if job.solver is None:
        ref_status = evaluation_status if evaluation_status in ("reference_unavailable", "unsupported") \
            else "reference_error"
        return ResultRow(**head, mode="reference", solver="reference",
                         reference=ReferenceRun(status=ref_status, reason=reason))
    return ResultRow(**head, solver=job.solver.name,
                     evaluation=TaskEvaluation(task=key, level=level, status=evaluation_status, reason=reason))


def crash_row(job: Job, crash: TaskCrash) -> ResultRow:
    return failure_row(job, CRASH_STATUS[crash.kind], "error", crash.reason)


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
    config = config.model_copy(update={"run_id": _run_id(out, config)})
    # Rewritten from the rows that parsed, so a line torn by a crash does not end up
    # in the middle of the file once new rows are appended.
    _write_atomically(results, "".join(row_line(r) + "\n" for r in existing))
    _write_atomically(out / CONFIG_FILE, config.model_dump_json(indent=2) + "\n")
    finished = {(r.task, r.epoch) for r in existing if r.final}

    # Helper modules beside the tasks (a case-file reader, shared code) are not jobs.
    paths = task_order([str(f) for f in select_task_files(config.target, config.levels, config.ops)
                        if not is_helper_module(f)], config.seed)
    budget = config.input_budget if config.input_budget is not None else default_budget_bytes()
    # The reference alone splits each task's cases over the workers: one task (nms, whose
    # forward dispatches tens of thousands of calls a case) would otherwise hold one worker
    # long after the others are done. The parts come back together as the task's one row.
    shards = config.workers if solver is None and config.workers > 1 else 1
    jobs_by_epoch = [[Job(path=p, epoch=e, seed=config.seed + e, key=job_key(config.run_id, e, task_key(Path(p))),
                          preset=config.preset, cases=config.cases, solver=solver, input_budget=budget,
                          detail=config.detail, shard=(k, shards) if shards > 1 else None)
                      for p in paths if (task_key(Path(p)), e) not in finished for k in range(shards)]
                     for e in range(config.epochs)]
    total = sum(len(j) for j in jobs_by_epoch) // shards
    if on_start:
        on_start(total)
    case_count = len(config.cases) if isinstance(config.cases, list) else config.cases
    timeout = config.task_timeout_s or default_task_timeout(case_count, solver.max_attempts if solver else 1)
    rows = list(existing)
    executor = make_executor(config.executor, config.workers, ray_address=config.ray_address)
    try:
        with results.open("a", encoding="utf-8") as fh:
            # Epochs run one after the other: a learning solver must see epoch e finished
            # before it starts e + 1.
            for jobs in jobs_by_epoch:
                parts: dict[str, list[ResultRow]] = {}
                for job, outcome in executor.map(run_job, jobs, timeout_s=timeout):
                    job_rows = [crash_row(job, outcome)] if isinstance(outcome, TaskCrash) else outcome
                    if job.shard is not None:
                        part = parts.setdefault(job.path, [])
                        part.append(job_rows[0])
                        if len(part) < job.shard[1]:
                            continue
                        job_rows = [merged_reference_row(parts.pop(job.path))]
                    for row in job_rows:
                        row.seed, row.preset, row.sage_version = job.seed, job.preset, __version__
                        fit_row(row, out)
                    _append(fh, job_rows)
                    rows += job_rows
                    if on_row:
                        on_row(next((r for r in job_rows if r.final), job_rows[-1]))
    finally:
        executor.close()
    return BenchRun(out=out, rows=rows, ran=total, resumed=len(finished),
                    wall_s=round(time.perf_counter() - start, 3))


def _run_id(out: Path, config: BenchConfig) -> str:
    stored = _stored_config(out).get("run_id") if config.resume else None
    return stored or config.run_id or uuid.uuid4().hex[:16]


def _append(fh: IO[str], rows: list[ResultRow]) -> None:
    # One write per job, on disk before the next job's: a killed run loses only the jobs in flight.
    fh.write("".join(row_line(r) + "\n" for r in rows))
    fh.flush()
    os.fsync(fh.fileno())


def row_line(row: ResultRow) -> str:
    """The row as one JSON line, always. Text is cleaned where it enters (sage/text.py), but a
    string that came in another way (a lone surrogate in a file name, a kernel source from an
    LLM) must not cost the row, nor stop the run: the row is written repaired instead."""
    try:
        return row.model_dump_json()
    except PydanticSerializationError:
        return ResultRow.model_validate(json_safe(row.model_dump())).model_dump_json()


def _write_atomically(path: Path, text: str) -> None:
    # A run killed while rewriting results.jsonl must not lose the rows it had.
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


class ResultsCorrupt(ValueError):
    """A line of results.jsonl other than the last does not parse."""


class ResumeMismatch(ValueError):
    """--resume with options that would mix incomparable rows in one results.jsonl."""


class SchemaMismatch(ResumeMismatch):
    """--resume on a results.jsonl whose rows were written with another results schema."""


# Options that change what a row means: a resumed run must keep them.
_RESUME_KEYS = ("target", "preset", "cases", "seed")


def _stored_config(out: Path) -> dict[str, Any]:
    path = Path(out) / CONFIG_FILE
    return json.loads(path.read_text()) if path.exists() else {}


def check_resumable(out: Path, config: BenchConfig) -> None:
    versions = stored_schema_versions(Path(out) / RESULTS_FILE)
    other = sorted(versions - {RESULTS_SCHEMA}, key=str)
    if other:
        raise SchemaMismatch(f"{out / RESULTS_FILE} holds rows of results schema version "
                             f"{', '.join(map(str, other))}; this sage writes version {RESULTS_SCHEMA} "
                             f"(new times: kernel_us, device_us, end_to_end_us): the two cannot be mixed in one run, "
                             f"use another --out")
    stored = _stored_config(out)
    current = json.loads(config.model_dump_json())
    for key in _RESUME_KEYS:
        if key in stored and stored[key] != current[key]:
            raise ResumeMismatch(f"{out} was run with {key}={stored[key]!r}, not {current[key]!r}: "
                                 f"resume with the same {key} or use another --out")


def stored_schema_versions(path: Path) -> set:
    """The results schema versions of the rows of a results.jsonl (1 for a row without the
    field); a line that does not parse has none (read_rows says what is wrong with it)."""
    if not Path(path).exists():
        return set()
    versions = set()
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        try:
            data = json.loads(line) if line.strip() else None
        except ValueError:
            continue
        if isinstance(data, dict):
            version = data.get("schema_version", 1)
            versions.add(version if isinstance(version, (int, str)) else repr(version))
    return versions


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
            rows.append(ResultRow.model_validate_json(line, context={"stored": True}))
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


__all__ = ["Attempt", "BenchConfig", "BenchRun", "Job", "KernelDirSolver", "ReferenceRun", "ResultRow",
           "ResultsCorrupt", "ResumeMismatch", "RESULTS_SCHEMA", "SchemaMismatch", "SolveResult", "Solver",
           "check_resumable", "choose_best",
           "collect_tasks", "crash_row", "default_out_dir", "default_task_timeout", "failure_row", "final_rows",
           "job_key", "read_rows", "run_bench", "run_job", "select_task_files", "task_order"]
