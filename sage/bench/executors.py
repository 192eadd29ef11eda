"""Where benchmark jobs run: this process, a local process pool, or a Ray cluster.

An executor maps a picklable function over picklable items and yields the results in
the order they finish, so the runner can write each row as soon as it exists (a crash
loses only the jobs in flight). All executors run the very same job function.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from typing import Any, Protocol


class ExecutorUnavailable(RuntimeError):
    """The requested executor cannot be used here (e.g. Ray is not installed)."""


class Executor(Protocol):
    def map(self, fn: Callable[[Any], Any], items: Iterable[Any]) -> Iterator[Any]: ...

    def close(self) -> None: ...


class InlineExecutor:
    """Runs jobs one after the other in this process (one worker, tests, debugging)."""

    def map(self, fn: Callable[[Any], Any], items: Iterable[Any]) -> Iterator[Any]:
        for item in items:
            yield fn(item)

    def close(self) -> None:
        return None


def _init_worker() -> None:
    # Each worker gets one core's worth of torch threads: W workers on W cores must not
    # each start W intra-op threads.
    import torch

    torch.set_num_threads(1)


class LocalExecutor:
    """A process pool. Workers are not forked from this process (forking a process whose
    torch thread pools are running can deadlock the child) but from a fork server that
    has imported torch and the harness once and run nothing: workers start in a fraction
    of a second instead of each importing torch again."""

    def __init__(self, workers: int):
        self.workers = max(1, workers)
        self._pool: ProcessPoolExecutor | None = None

    def map(self, fn: Callable[[Any], Any], items: Iterable[Any]) -> Iterator[Any]:
        if self._pool is None:
            context = multiprocessing.get_context("forkserver")
            context.set_forkserver_preload(["torch", "sage.bench.runner"])
            self._pool = ProcessPoolExecutor(max_workers=self.workers, initializer=_init_worker,
                                             mp_context=context)
        pending: set[Future] = {self._pool.submit(fn, item) for item in items}
        try:
            while pending:
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                for fut in done:
                    yield fut.result()
        finally:
            for fut in pending:
                fut.cancel()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None


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

    def map(self, fn: Callable[[Any], Any], items: Iterable[Any]) -> Iterator[Any]:
        ray = self._ray
        remote = ray.remote(num_cpus=self.num_cpus_per_job)(fn)
        pending = [remote.remote(item) for item in items]
        try:
            while pending:
                done, pending = ray.wait(pending, num_returns=1)
                for ref in done:
                    yield ray.get(ref)
        finally:
            for ref in pending:
                ray.cancel(ref)

    def close(self) -> None:
        # The Ray instance may be shared with the caller (tests, notebooks): not shut down here.
        return None


def make_executor(kind: str, workers: int, *, ray_address: str | None = None) -> Executor:
    if kind == "ray":
        return RayExecutor(address=ray_address)
    if kind == "local":
        return InlineExecutor() if workers <= 1 else LocalExecutor(workers)
    raise ValueError(f"unknown executor '{kind}' (choose local or ray)")
