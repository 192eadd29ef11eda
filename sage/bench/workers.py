"""Worker processes that cost only their own job when they fail, and never outlive their owner.

A `Worker` runs one job at a time, sent over a pipe. A job that raises comes back as a
`TaskCrash` of kind "raised"; a worker that dies (segfault, `os._exit`, SIGKILL from the
OOM killer, a truncated answer) gives "crashed", read from its exit status; one that
passes its deadline is killed and gives "timeout". The owner then starts a new worker.

Workers are forked from a fork server: a process that imported torch and the harness
once and ran nothing. Forking a process whose torch thread pools have run can deadlock
the child, and a fresh interpreter per worker would import torch every time.

Lifetimes. A worker ends the moment its owner dies, so a `kill -9` of `sage bench` leaves
nothing running and no job finishing (and storing an episode) behind its back:
- a watchdog thread waits on the pipe multiprocessing keeps from owner to worker, and
  kills the worker when it closes;
- PR_SET_PDEATHSIG(SIGKILL) (Linux) does it in the kernel, also when the worker is stuck
  in C code holding the GIL. It fires when the parent dies, and a worker's parent is the
  fork server, which exits when its owner dies, once no process holds its "alive" pipe:
  multiprocessing hands a copy to every child, so each worker closes its copy. After the
  call the worker checks that its parent is still the one it was started under: one that
  died before the call would never send the signal.
Processes a worker forks (the kernel sandbox's children) get the signal through an
at-fork hook.
"""

from __future__ import annotations

import ctypes
import functools
import multiprocessing
import os
import pickle
import re
import signal
import sys
import threading
import time
from collections.abc import Callable
from multiprocessing import connection
from multiprocessing.context import BaseContext
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

# Imported by the fork server before it forks anything, so workers start warm.
PRELOAD = ["torch", "sage.bench.runner"]
PR_SET_PDEATHSIG = 1
# A worker whose owner died before it could arm the signal exits at once with this code.
ORPHANED_EXIT = 75
_REASON_CHARS = 300
_ANSI = re.compile(r"\x1b\[[0-9;]*m")     # colours in messages (Ray's) do not belong in a reason
_SIGNAL_HINTS = {signal.SIGSEGV: "segmentation fault", signal.SIGKILL: "killed from outside, e.g. out of memory",
                 signal.SIGABRT: "aborted", signal.SIGBUS: "bus error", signal.SIGFPE: "arithmetic fault"}


class TaskCrash(BaseModel):
    """A job that produced no result: how it ended and a one-line reason."""

    model_config = ConfigDict(frozen=True)

    kind: Literal["raised", "crashed", "timeout"]
    reason: str


def one_line(exc: BaseException) -> str:
    text = _ANSI.sub("", str(exc)).strip().splitlines()
    message = f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__
    return message if len(message) <= _REASON_CHARS else message[:_REASON_CHARS - 1] + "…"


def pdeathsig_supported() -> bool:
    return sys.platform.startswith("linux")


@functools.cache
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _arm_pdeathsig() -> None:
    if _libc().prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"prctl(PR_SET_PDEATHSIG): {os.strerror(errno)}")


def _parent_of(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # "pid (comm) state ppid ...": comm may hold spaces and parentheses, so split after the last ")".
    return int(stat.rsplit(")", 1)[1].split()[1])


def die_with_parent(owner: int) -> None:
    """SIGKILL this process when its parent dies; exit at once if the parent is gone already.
    `owner` is the process that asked for this one: the parent itself, or the parent of the
    fork server that forked it (a reparented process has neither above it)."""
    if not pdeathsig_supported():
        return
    _arm_pdeathsig()
    parent = os.getppid()
    if parent != owner and _parent_of(parent) != owner:
        os._exit(ORPHANED_EXIT)


_forking_pid = 0
_in_worker = False


def in_worker() -> bool:
    """True inside a worker process: the code running here is isolated already."""
    return _in_worker


def _note_forking_pid() -> None:
    global _forking_pid
    _forking_pid = os.getpid()


def _child_dies_with_parent() -> None:
    _arm_pdeathsig()
    if os.getppid() != _forking_pid:
        os._exit(ORPHANED_EXIT)


def _children_die_with_this_process() -> None:
    if pdeathsig_supported():
        _libc()  # loaded here: the hook runs in a fresh child, where dlopen is best avoided
        os.register_at_fork(before=_note_forking_pid, after_in_child=_child_dies_with_parent)


def _exit_with_owner() -> None:
    owner = multiprocessing.parent_process()
    if owner is None or owner.sentinel is None:
        return

    def watch() -> None:
        connection.wait([owner.sentinel])
        os.kill(os.getpid(), signal.SIGKILL)

    threading.Thread(target=watch, name="sage-owner-watch", daemon=True).start()


def _release_fork_server() -> None:
    from multiprocessing import forkserver

    server = forkserver._forkserver
    alive = getattr(server, "_forkserver_alive_fd", None)
    # Only a copy inherited from the fork server is closed, never one of a server this process started.
    if isinstance(alive, int) and getattr(server, "_forkserver_pid", None) is None:
        os.close(alive)
        server._forkserver_alive_fd = None


def serve(conn: connection.Connection, owner: int, torch_threads: int | None) -> None:
    """A worker's main loop: (fn, item) in, ("ok", result) or ("raised", reason) out; None stops it."""
    global _in_worker
    _in_worker = True
    die_with_parent(owner)
    _exit_with_owner()
    _release_fork_server()
    _children_die_with_this_process()
    signal.signal(signal.SIGINT, signal.SIG_IGN)   # Ctrl-C is the owner's: it stops the workers itself
    os.dup2(2, 1)                                   # a task's prints must not land in the run's stdout (--json)
    if torch_threads is not None:
        import torch

        from sage.npu.sim.blas import set_blas_threads

        torch.set_num_threads(torch_threads)
        # numpy's OpenBLAS too: its idle threads busy-wait after each call, which made the
        # three float64 dot products of comparing a case's outputs cost twice the CPU on 2 cores.
        set_blas_threads(torch_threads)
    while True:
        try:
            message = conn.recv()
        except EOFError:
            return
        if message is None:
            return
        fn, item = message
        try:
            answer: tuple[str, Any] = ("ok", fn(item))
        except BaseException as exc:  # noqa: BLE001 - SystemExit from a task file included: it is this job's failure
            answer = ("raised", one_line(exc))
        try:
            conn.send(answer)
        except (BrokenPipeError, ConnectionResetError):
            return                                   # the owner is gone
        except Exception as exc:  # the result did not pickle: say so instead of dying silently
            conn.send(("raised", f"the job's result cannot be sent back: {one_line(exc)}"))


def fork_server_context() -> BaseContext:
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(PRELOAD)   # only takes effect before the server starts
    return context


class Worker:
    """A worker process as its owner sees it: at most one job at a time."""

    def __init__(self, context: BaseContext | None = None, *, torch_threads: int | None = None) -> None:
        context = context or fork_server_context()
        self.conn, child = context.Pipe()
        self.process = context.Process(target=serve, args=(child, os.getpid(), torch_threads), name="sage-worker")
        self.process.start()
        child.close()
        self.item: Any = None
        self.timeout_s: float | None = None
        self.deadline: float | None = None

    def submit(self, fn: Callable[[Any], Any], item: Any, timeout_s: float | None) -> None:
        self.item, self.timeout_s = item, timeout_s
        self.deadline = time.monotonic() + timeout_s if timeout_s else None
        try:
            self.conn.send((fn, item))
        except OSError:
            pass                     # the worker is dead: collect() reports how it ended

    def collect(self) -> Any:
        """The job's result or TaskCrash, once the pipe or the process says something."""
        try:
            data = self.conn.recv_bytes()
        except (EOFError, OSError) as exc:  # died before or while answering
            return TaskCrash(kind="crashed", reason=self._death(exc))
        self.deadline = None
        try:
            status, payload = pickle.loads(data)
        except Exception as exc:  # e.g. a class only the worker can import: this job's failure, not the run's
            return TaskCrash(kind="raised", reason=f"the job's result cannot be read: {one_line(exc)}")
        return payload if status == "ok" else TaskCrash(kind="raised", reason=payload)

    def time_out(self) -> TaskCrash:
        self.kill()
        return TaskCrash(kind="timeout", reason=f"no result within the {self.timeout_s:g} s limit per task: "
                                                "the worker was stopped")

    def _death(self, exc: BaseException) -> str:
        self.process.join(timeout=5)
        code = self.process.exitcode
        if code is None:
            self.kill()
            return f"the worker's answer was cut off ({one_line(exc)})"
        if code < 0:
            sig = signal.Signals(-code)
            hint = _SIGNAL_HINTS.get(sig)
            return f"the worker process died from {sig.name}" + (f" ({hint})" if hint else "")
        return f"the worker process exited with code {code} in the middle of the job"

    def kill(self) -> None:
        if self.process.is_alive():
            self.process.kill()
        self.process.join(timeout=5)
        self.conn.close()

    def stop(self) -> None:
        """Ends an idle worker (a busy one is killed)."""
        if self.deadline is None and self.process.is_alive():
            try:
                self.conn.send(None)
            except OSError:
                pass                                 # already gone: join below reaps it
            self.process.join(timeout=5)
        self.kill()


def wait_for_outcomes(busy: list[Worker]) -> list[tuple[Worker, Any]]:
    """Blocks until at least one busy worker has an outcome (result, TaskCrash) or passes its deadline."""
    while True:
        deadlines = [w.deadline for w in busy if w.deadline is not None]
        wait_s = max(0.0, min(deadlines) - time.monotonic()) if deadlines else None
        ready = set(connection.wait([w.conn for w in busy] + [w.process.sentinel for w in busy], wait_s))
        now = time.monotonic()
        done = []
        for w in busy:
            if w.conn in ready or w.process.sentinel in ready:
                done.append((w, w.collect()))
            elif w.deadline is not None and now >= w.deadline:
                done.append((w, w.time_out()))
        if done:
            return done
