"""The child side of `sandbox.run_sandboxed`, and the wire format of its reply.

The child is forked from the caller: it already holds the simulator, the preset and the
input arrays, so nothing but the result crosses the pipe. The reply is one JSON header
(error, profile, trace, output shapes and dtypes) followed by the raw bytes of each output,
received straight into freshly allocated arrays. No pickle: the parent never runs code
chosen by the child.
"""

from __future__ import annotations

import json
import math
import os
import resource
import signal
import sys
import time
import traceback
from dataclasses import dataclass
from multiprocessing import BufferTooShort
from multiprocessing.connection import Connection
from types import FrameType
from typing import TYPE_CHECKING, Any

import ml_dtypes
import numpy as np

if TYPE_CHECKING:
    from sage.npu.execute import OutputSpec
    from sage.npu.hardware import HardwareSpec
    from sage.npu.results import KernelRun
    from sage.npu.sandbox import Limits

# The address space a child inherits (the parent's interpreter, numpy, maybe torch) is not
# the kernel's doing; the memory limit is added on top of it.
_PAGE = os.sysconf("SC_PAGE_SIZE")
# After a wall-clock timeout the parent asks the child for its line and waits this long.
GRACE_SECONDS = 2.0


@dataclass
class Job:
    source: str
    args: list[Any]
    kwargs: dict[str, Any]
    preset: HardwareSpec
    filename: str
    trace: bool
    expected: list[OutputSpec] | None
    limits: Limits


class TimedOut:
    """Marker: no reply before the deadline."""


TIMED_OUT = TimedOut()


def wall_timeout_message(limits: Limits) -> str:
    return (f"the kernel did not finish within the wall-clock limit of {limits.wall_seconds:g} s "
            "(an endless loop, or far too much work for the simulator)")


def cpu_timeout_message(limits: Limits) -> str:
    return (f"the kernel used up its CPU-time limit of {limits.cpu_seconds:g} s "
            "(an endless loop, or far too much work for the simulator)")


def child_main(sender: Connection, job: Job, cpu_flag: Any) -> None:
    """Entry point of the forked child: limit itself, run the kernel, send the result."""
    from sage.npu.execute import run_kernel_source

    _install_timeout_handlers(job, cpu_flag)
    _close_inherited_fds(keep=sender.fileno())
    _apply_limits(job.limits)
    run = _run_guarded(run_kernel_source, job)
    signal.signal(signal.SIGUSR1, signal.SIG_IGN)  # too late to interrupt: the reply is ready
    signal.signal(signal.SIGXCPU, signal.SIG_DFL)
    send(sender, run)
    sender.close()
    # Leave without running the parent's inherited atexit/finalizer callbacks: they would try
    # to close descriptors (SQLite, sockets) that _close_inherited_fds already dropped.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def _run_guarded(run_kernel_source: Any, job: Job) -> KernelRun:
    from sage.npu.errors import KernelRuntimeError, KernelTimeout, MemoryLimitError
    from sage.npu.results import KernelRun

    try:
        return run_kernel_source(job.source, job.args, job.kwargs, preset=job.preset,
                                 filename=job.filename, trace=job.trace, expected=job.expected)
    except KernelTimeout as exc:  # the timeout signal landed outside the kernel's own code
        return KernelRun(outputs=None, error=exc.info(), profile=None)
    except MemoryError:
        err = MemoryLimitError(f"the kernel exceeded the memory limit of {job.limits.memory_mb} MB",
                               line=None)
        return KernelRun(outputs=None, error=err.info(), profile=None)
    except Exception as exc:  # noqa: BLE001 - a simulator bug: report it, loudly, as this run's error
        traceback.print_exc(file=sys.stderr)
        where = traceback.extract_tb(exc.__traceback__)[-1]
        err = KernelRuntimeError(
            f"internal simulator error (a bug in sage, not necessarily in the kernel): "
            f"{type(exc).__name__}: {exc} at {os.path.basename(where.filename)}:{where.lineno}",
            line=None)
        return KernelRun(outputs=None, error=err.info(), profile=None)


def _kernel_line(frame: FrameType | None, filename: str) -> int | None:
    """Innermost line of the kernel file on the interrupted stack."""
    while frame is not None:
        if frame.f_code.co_filename == filename:
            return frame.f_lineno
        frame = frame.f_back
    return None


def _install_timeout_handlers(job: Job, cpu_flag: Any) -> None:
    from sage.npu.errors import KernelTimeout

    def on_wall_timeout(signum: int, frame: FrameType | None) -> None:
        raise KernelTimeout(wall_timeout_message(job.limits), line=_kernel_line(frame, job.filename))

    def on_cpu_limit(signum: int, frame: FrameType | None) -> None:
        cpu_flag.value = 1  # if the kernel swallows this exception, the hard limit's SIGKILL follows
        raise KernelTimeout(cpu_timeout_message(job.limits), line=_kernel_line(frame, job.filename))

    signal.signal(signal.SIGUSR1, on_wall_timeout)
    signal.signal(signal.SIGXCPU, on_cpu_limit)
    # Ctrl-C reaches the whole process group: the parent handles it and kills this child.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # With RLIMIT_FSIZE at 0, a write to a file fails with EFBIG instead of killing the child.
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)


def _close_inherited_fds(keep: int) -> None:
    """Drop every descriptor the parent had open (databases, sockets, logs) except stdio."""
    limit = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    top = limit if limit != resource.RLIM_INFINITY else 65536
    os.closerange(3, keep)
    os.closerange(keep + 1, top)


def _lower_limit(which: int, soft: int, hard: int) -> None:
    """Set a limit, never above the hard limit the child inherited (only root may raise it)."""
    inherited = resource.getrlimit(which)[1]
    if inherited != resource.RLIM_INFINITY:
        soft, hard = min(soft, inherited), min(hard, inherited)
    resource.setrlimit(which, (soft, hard))


def _apply_limits(limits: Limits) -> None:
    cpu = max(1, math.ceil(limits.cpu_seconds))
    # The soft limit raises KernelTimeout (SIGXCPU); the hard one kills a kernel that swallows it.
    _lower_limit(resource.RLIMIT_CPU, cpu, cpu + 2)
    with open("/proc/self/statm") as statm:
        inherited = int(statm.read().split()[0]) * _PAGE
    address_space = inherited + limits.memory_mb * 2**20
    _lower_limit(resource.RLIMIT_AS, address_space, address_space)
    _lower_limit(resource.RLIMIT_FSIZE, 0, 0)
    _lower_limit(resource.RLIMIT_CORE, 0, 0)


def send(conn: Connection, run: KernelRun) -> None:
    outputs = None if run.outputs is None else [np.ascontiguousarray(a) for a in run.outputs]
    header = {
        "error": None if run.error is None else run.error.model_dump(mode="json"),
        "profile": None if run.profile is None else run.profile.model_dump(mode="json"),
        "trace": run.trace,
        "outputs": None if outputs is None else [
            {"shape": list(a.shape), "dtype": a.dtype.name} for a in outputs],
    }
    conn.send_bytes(json.dumps(header).encode())
    for array in outputs or []:
        conn.send_bytes(array.reshape(-1).view(np.uint8))


def _dtype(name: str) -> np.dtype:
    if hasattr(ml_dtypes, name) and name != "finfo":
        return np.dtype(getattr(ml_dtypes, name))
    dtype = np.dtype(name)
    if dtype.hasobject:
        raise ValueError(f"object arrays cannot cross the sandbox pipe ({name})")
    return dtype


def receive(conn: Connection, deadline: float, max_bytes: int) -> KernelRun | TimedOut | None:
    """The child's reply; TIMED_OUT if none started before `deadline`, None if the child died."""
    from sage.npu.errors import KernelRuntimeError
    from sage.npu.results import ErrorInfo, KernelRun, Profile

    if not conn.poll(max(0.0, deadline - time.monotonic())):
        return TIMED_OUT
    try:
        header = json.loads(conn.recv_bytes(maxlength=max_bytes))
        outputs = None if header["outputs"] is None else _receive_outputs(
            conn, header, max_bytes, max(deadline, time.monotonic()) + GRACE_SECONDS)
        return KernelRun(
            outputs=outputs,
            error=None if header["error"] is None else ErrorInfo.model_validate(header["error"]),
            profile=None if header["profile"] is None else Profile.model_validate(header["profile"]),
            trace=header["trace"],
        )
    except EOFError:
        return None
    except (OSError, ValueError, KeyError, TypeError, BufferTooShort) as exc:
        # Only a child that broke out of the AST check could send this; the parent survives it.
        err = KernelRuntimeError(f"malformed reply from the kernel process: {exc}", line=None)
        return KernelRun(outputs=None, error=err.info(), profile=None)


def _receive_outputs(conn: Connection, header: dict, max_bytes: int, deadline: float) -> list[np.ndarray]:
    specs = [(tuple(int(n) for n in o["shape"]), _dtype(o["dtype"])) for o in header["outputs"]]
    total = sum(math.prod(shape) * dtype.itemsize for shape, dtype in specs)
    if total > max_bytes:
        raise ValueError(f"{total} bytes of outputs announced, more than the memory limit")
    outputs = []
    for shape, dtype in specs:
        array = np.empty(shape, dtype)
        flat = array.reshape(-1).view(np.uint8)
        if not conn.poll(max(0.0, deadline - time.monotonic())):
            raise ValueError("the kernel process stopped in the middle of its reply")
        if conn.recv_bytes_into(flat) != flat.nbytes:
            raise ValueError(f"output of shape {shape} arrived with the wrong number of bytes")
        outputs.append(array)
    return outputs
