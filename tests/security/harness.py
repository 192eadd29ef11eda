"""Run a function in a forked child after some isolation layers, and get what happened back.

The child reports over a pipe that it keeps through lock_down (so every report is also a
test that a kept descriptor still works): the function's JSON value, or the errno of the
OSError it raised. A child that dies or execs reports nothing; the parent then sees its
wait status.
"""

from __future__ import annotations

import json
import os
import select
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sage.npu import isolation

REPLY_DEADLINE_SECONDS = 10.0
LOCK_DOWN_LIMITS = {"cpu_seconds": 10, "address_space_bytes": 64 * 2**30, "file_size_bytes": 0}


@dataclass(frozen=True)
class Outcome:
    value: Any = None
    errno: int | None = None
    error: str | None = None
    stage: str = "run"  # "setup": the layers failed; "run": the function did
    setup_seconds: float | None = None  # how long the layers took in the child
    replied: bool = True
    wait_status: int = 0

    @property
    def signal(self) -> int | None:
        return os.WTERMSIG(self.wait_status) if os.WIFSIGNALED(self.wait_status) else None


# A layer setup: (private_dir, kept descriptors, parent pid) -> None, run in the child.
Setup = Callable[[str, list[int], int], object]


def full(private_dir: str, keep: list[int], parent: int) -> object:
    return isolation.lock_down(private_dir=private_dir, keep_fds=keep, expected_parent=parent,
                               **LOCK_DOWN_LIMITS)


# Each layer alone, to show which one stops what.
SINGLE_LAYERS: dict[str, Setup] = {
    "landlock": lambda d, keep, parent: isolation.restrict_file_system(d),
    "seccomp": lambda d, keep, parent: isolation.install_seccomp(),
    "netns": lambda d, keep, parent: isolation.enter_network_namespace(),
    "uid": lambda d, keep, parent: isolation.drop_privileges(d, parent),
}


def run_isolated(fn: Callable[[], Any], private_dir: str, setup: Setup = full,
                 extra_keep: tuple[int, ...] = ()) -> Outcome:
    """fn() in a forked child after `setup`; its value or errno."""
    read_end, write_end = os.pipe()
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:
        _child(fn, private_dir, setup, [write_end, *extra_keep], parent)
    os.close(write_end)
    try:
        reply = _read_all(read_end, time.monotonic() + REPLY_DEADLINE_SECONDS)
    finally:
        os.close(read_end)
    if reply is None:
        os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    if not reply:
        return Outcome(replied=False, wait_status=status)
    return Outcome(**json.loads(reply), wait_status=status)


def _child(fn: Callable[[], Any], private_dir: str, setup: Setup, keep: list[int], parent: int) -> None:
    stage = "setup"
    try:
        start = time.perf_counter()
        setup(private_dir, keep, parent)
        stage, took = "run", time.perf_counter() - start
        result: dict[str, Any] = {"value": fn(), "setup_seconds": took}
    except OSError as exc:
        result = {"errno": exc.errno, "error": str(exc), "stage": stage}
    except Exception as exc:  # noqa: BLE001 - reported to the test, which fails on it
        result = {"error": f"{type(exc).__name__}: {exc}", "stage": stage}
    try:
        os.write(keep[0], json.dumps(result).encode())
    finally:
        os._exit(0)  # never run pytest's code in the child


def _read_all(fd: int, deadline: float) -> bytes | None:
    chunks = []
    while select.select([fd], [], [], max(0.0, deadline - time.monotonic()))[0]:
        chunk = os.read(fd, 65536)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
    return None
