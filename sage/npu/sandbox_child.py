"""The sandboxed child: forked by the zygote for one kernel evaluation, never returns.

It reads its job, locks itself down (``isolation.lock_down``: parent-death signal, only
its two descriptors, no network, a read-only file system, an unprivileged uid, rlimits,
a seccomp filter), then compiles and runs the kernel functionally (``execute.run_functional``)
and writes the reply: outputs and the instruction trace. The timing is not computed here:
the parent replays the trace.
"""

from __future__ import annotations

import os
import signal
import sys
import traceback
from types import FrameType

import numpy as np

from sage.npu.sandbox_wire import MAX_ERROR_CHARS, encode_reply_header, read_job

WALL_TIMEOUT = ("the kernel did not finish within the wall-clock limit of {seconds:g} s "
                "(an endless loop, or far too much work for the simulator)")
CPU_TIMEOUT = ("the kernel used up its CPU-time limit of {seconds:g} s "
               "(an endless loop, or far too much work for the simulator)")


def warm_up() -> None:
    """Import and touch everything a child uses, so each fork starts warm."""
    import sage.npu.ascendc  # noqa: F401
    import sage.npu.execute  # noqa: F401
    import sage.npu.isolation  # noqa: F401
    from sage.npu.hardware import list_presets, load_preset
    from sage.npu.restricted import compile_kernel

    for name in list_presets():
        load_preset(name)
    compile_kernel("from sage.npu.ascendc import *\n", "warm.py")
    # Assembles the seccomp program and loads libc once, so every child inherits them.
    sage.npu.isolation.probe()


def child_main(job_fd: int, reply_fd: int, private_dir: str, zygote_pid: int) -> None:
    status = 0
    try:
        _run(job_fd, reply_fd, private_dir, zygote_pid)
    except BaseException:  # noqa: BLE001 - a bug in sage itself: say so in the reply if the pipe still works
        status = 70
        _write_internal_error(reply_fd)
    finally:
        os._exit(status)


def _run(job_fd: int, reply_fd: int, private_dir: str, zygote_pid: int) -> None:
    from sage.npu import isolation
    from sage.npu.execute import FunctionalRun, OutputSpec, run_functional
    from sage.npu.hardware import HardwareSpec
    from sage.npu.sim.runtrace import encode

    header, args, kwargs = read_job(job_fd)
    limits = header["limits"]
    _quiet_stdio()
    with open("/proc/self/statm") as statm:
        mapped = int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    report = isolation.lock_down(
        private_dir=private_dir, keep_fds=[job_fd, reply_fd], cpu_seconds=limits["cpu_seconds"],
        address_space_bytes=mapped + limits["memory_mb"] * 2**20, file_size_bytes=0,
        expected_parent=zygote_pid)
    spec = HardwareSpec.model_validate(header["preset"])
    expected = None if header["expected"] is None else [OutputSpec(**e) for e in header["expected"]]
    _install_timeout_handlers(header["filename"], limits)
    try:
        run = run_functional(header["source"], args, kwargs, spec=spec, filename=header["filename"],
                             expected=expected, instruction_budget=header["instruction_budget"])
    except MemoryError:
        from sage.npu.errors import MemoryLimitError
        err = MemoryLimitError(f"the kernel exceeded the memory limit of {limits['memory_mb']} MB")
        run = FunctionalRun(None, None, err.info())
    signal.signal(signal.SIGUSR1, signal.SIG_IGN)  # too late to interrupt: the reply is ready
    signal.signal(signal.SIGXCPU, signal.SIG_DFL)
    trace = encode(run.trace) if run.trace is not None else b""
    # ascontiguousarray makes a 0-d array 1-d: keep each output's own shape (rank 0 included)
    outputs = None if run.outputs is None else [np.ascontiguousarray(o).reshape(o.shape) for o in run.outputs]
    error = None if run.error is None else run.error.model_dump(mode="json")
    head = encode_reply_header(error, run.printed, outputs, len(trace), report.model_dump(mode="json"))
    _write_all(reply_fd, head)
    for o in outputs or []:
        _write_all(reply_fd, memoryview(o.reshape(-1).view(np.uint8)))
    _write_all(reply_fd, trace)


def _write_all(fd: int, data) -> None:
    view = memoryview(data).cast("B")
    while view:
        n = os.write(fd, view)
        view = view[n:]


def _write_internal_error(reply_fd: int) -> None:
    text = traceback.format_exc()[-MAX_ERROR_CHARS:]
    error = {"type": "KernelRuntimeError", "line": None,
             "message": f"internal simulator error (a bug in sage, not necessarily in the kernel): {text}"}
    try:
        _write_all(reply_fd, encode_reply_header(error, "", None, 0, None))
    except OSError:
        pass  # the parent is gone or stopped reading: its own timeout or EOF handling reports it


def _quiet_stdio() -> None:
    """The kernel's process writes nothing to the terminal: stdio goes to /dev/null before the
    lock-down (opening it later would be refused)."""
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    os.close(devnull)
    sys.stdout = sys.stderr = open(os.devnull, "w")  # noqa: SIM115 - lives as long as the process


def _kernel_line(frame: FrameType | None, filename: str) -> int | None:
    """Innermost line of the kernel file on the interrupted stack."""
    while frame is not None:
        if frame.f_code.co_filename == filename:
            return frame.f_lineno
        frame = frame.f_back
    return None


def _install_timeout_handlers(filename: str, limits: dict) -> None:
    from sage.npu.errors import KernelTimeout

    def on_wall_timeout(signum: int, frame: FrameType | None) -> None:
        raise KernelTimeout(WALL_TIMEOUT.format(seconds=limits["wall_seconds"]), line=_kernel_line(frame, filename))

    def on_cpu_limit(signum: int, frame: FrameType | None) -> None:
        raise KernelTimeout(CPU_TIMEOUT.format(seconds=limits["cpu_seconds"]), line=_kernel_line(frame, filename))

    signal.signal(signal.SIGUSR1, on_wall_timeout)
    signal.signal(signal.SIGXCPU, on_cpu_limit)
    signal.signal(signal.SIGINT, signal.SIG_IGN)   # Ctrl-C reaches the group: the parent handles it
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write over the file-size limit fails instead
