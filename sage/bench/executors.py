"""Where benchmark jobs run: worker processes on this machine, or a Ray cluster.

An executor maps a picklable function over picklable items and yields `(item, outcome)`
in the order jobs finish, so the runner can write each row as soon as it exists (a
crash loses only the jobs in flight). The outcome is the function's result, or a
`TaskCrash` when the job raised, killed its process or passed the per-task deadline:
one job's failure never stops the others. All executors run the very same job function.

`run_in_subprocess` is the same isolation for a single call (a task's reference in
`sage npu run` or `sage synth`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Protocol

from sage.bench.workers import TaskCrash, Worker, fork_server_context, in_worker, one_line, pdeathsig_supported, \
    wait_for_outcomes

__all__ = ["Executor", "ExecutorUnavailable", "InlineExecutor", "LocalExecutor", "RayExecutor", "TaskCrash",
           "in_worker", "isolation_notes", "make_executor", "run_in_subprocess"]


class ExecutorUnavailable(RuntimeError):
    """The requested executor cannot be used here (e.g. Ray is not installed)."""


class Executor(Protocol):
    def map(self, fn: Callable[[Any], Any], items: Iterable[Any], *,
            timeout_s: float | None = None) -> Iterator[tuple[Any, Any]]: ...

    def close(self) -> None: ...


def run_in_subprocess(fn: Callable[[Any], Any], arg: Any, *, timeout_s: float | None,
                      torch_threads: int | None = None) -> Any:
    """`fn(arg)` in a worker process: its result, or a TaskCrash if it raised, died (segfault,
    os._exit, out of memory) or ran past `timeout_s` (None: no limit). `fn` and `arg` must
    pickle (`fn` a module-level function, `arg` and the result plain data). The worker is
    forked from this process's fork server, started on first use (the time of importing
    torch once; later calls cost milliseconds), and never outlives this process.

    Inside a bench worker (`in_worker()`), the code is isolated already: a second level
    costs a fork server per worker and buys nothing."""
    worker = Worker(torch_threads=torch_threads)
    try:
        worker.submit(fn, arg, timeout_s)
        return wait_for_outcomes([worker])[0][1]
    finally:
        worker.stop()


class InlineExecutor:
    """Runs jobs one after the other in this process, for tests and debugging (a debugger
    sees the job): an exception becomes a TaskCrash, but a segfault or a hang stops the run."""

    def map(self, fn: Callable[[Any], Any], items: Iterable[Any], *,
            timeout_s: float | None = None) -> Iterator[tuple[Any, Any]]:
        for item in items:
            try:
                outcome = fn(item)
            except Exception as exc:  # the job's failure, reported as the workers report it
                outcome = TaskCrash(kind="raised", reason=one_line(exc))
            yield item, outcome

    def close(self) -> None:
        return None


class LocalExecutor:
    """`workers` worker processes, each one job at a time. A worker that crashed or timed
    out is replaced; the others keep their jobs."""

    def __init__(self, workers: int):
        self.workers = max(1, workers)
        self._idle: list[Worker] = []
        self._busy: list[Worker] = []

    def map(self, fn: Callable[[Any], Any], items: Iterable[Any], *,
            timeout_s: float | None = None) -> Iterator[tuple[Any, Any]]:
        waiting = deque(items)
        try:
            while waiting or self._busy:
                while waiting and len(self._busy) < self.workers:
                    worker = self._idle_worker() or Worker(fork_server_context(), torch_threads=1)
                    worker.submit(fn, waiting.popleft(), timeout_s)
                    self._busy.append(worker)
                for worker, outcome in wait_for_outcomes(self._busy):
                    self._busy.remove(worker)
                    if isinstance(outcome, TaskCrash) and outcome.kind != "raised":
                        worker.kill()
                    else:
                        self._idle.append(worker)
                    yield worker.item, outcome
        finally:
            # The consumer stopped (an error, Ctrl-C): the jobs still running are abandoned.
            for worker in self._busy:
                worker.kill()
            self._busy.clear()

    def _idle_worker(self) -> Worker | None:
        while self._idle:
            worker = self._idle.pop()
            if worker.process.is_alive():
                return worker
            worker.kill()            # died between jobs (the OOM killer): reaped, not reused
        return None

    def close(self) -> None:
        for worker in self._idle + self._busy:
            worker.stop()
        self._idle.clear()
        self._busy.clear()


def _isolated(fn: Callable[[Any], Any], item: Any, timeout_s: float | None) -> Any:
    # Runs inside a Ray worker: the job gets its own process there, so it can time out and
    # crash without taking the Ray worker (and Ray's retries) with it.
    return run_in_subprocess(fn, item, timeout_s=timeout_s, torch_threads=1)


class RayExecutor:
    """Runs each job as a Ray task. Uses the Ray instance already initialised in this
    process, else connects to `address` (None starts a local instance; "auto" joins the
    cluster this machine belongs to)."""

    def __init__(self, address: str | None = None, num_cpus_per_job: float = 1.0):
        try:
            import ray
        except ImportError as exc:
            raise ExecutorUnavailable(
                "the ray executor needs Ray: pip install 'sage-npu[ray]' (or 'ray>=2.9')") from exc
        self._ray = ray
        if not ray.is_initialized():
            ray.init(address=address, include_dashboard=False, log_to_driver=False)
        self.num_cpus_per_job = num_cpus_per_job

    def map(self, fn: Callable[[Any], Any], items: Iterable[Any], *,
            timeout_s: float | None = None) -> Iterator[tuple[Any, Any]]:
        ray = self._ray
        # No retries: a job that kills its worker would only do it again.
        remote = ray.remote(num_cpus=self.num_cpus_per_job, max_retries=0)(_isolated)
        pending = {remote.remote(fn, item, timeout_s): item for item in items}
        try:
            while pending:
                done, _ = ray.wait(list(pending), num_returns=1)
                for ref in done:
                    item = pending.pop(ref)
                    try:
                        outcome = ray.get(ref)
                    except ray.exceptions.RayError as exc:   # the Ray worker itself died or was lost
                        outcome = TaskCrash(kind="crashed", reason=one_line(exc))
                    yield item, outcome
        finally:
            for ref in pending:
                ray.cancel(ref, force=True)

    def close(self) -> None:
        # The Ray instance may be shared with the caller (tests, notebooks): not shut down here.
        return None


def make_executor(kind: str, workers: int, *, ray_address: str | None = None) -> Executor:
    if kind == "ray":
        return RayExecutor(address=ray_address)
    if kind == "local":
        return LocalExecutor(workers)
    if kind == "inline":
        return InlineExecutor()
    raise ValueError(f"unknown executor '{kind}' (choose local or ray)")


def isolation_notes(kind: str) -> list[str]:
    """What a run on this executor cannot promise, said once in the run's output."""
    notes = []
    if kind == "ray":
        notes.append("Ray starts its own worker processes, so they cannot get PR_SET_PDEATHSIG from sage: "
                     "a killed `sage bench` leaves them to Ray (each job's own process still dies with its "
                     "Ray worker)")
    elif not pdeathsig_supported():
        notes.append("PR_SET_PDEATHSIG is Linux-only: on this system a killed `sage bench` may leave workers running")
    return notes
