"""Running untrusted kernel text: a locked-down child runs it, this process judges the result.

Kernel files are written by an LLM, so they are treated as hostile. What guards what
(docs/security.md):

1. the restricted language (``restricted.py``) and capability handles (``ascendc/handles.py``)
   keep kernel code inside the DSL;
2. the kernel runs in a child forked from a clean zygote (``zygote.py``) that never held
   reference outputs or anything else of this process, locked down by ``isolation.py``
   (no network, no exec or fork, read-only files, an unprivileged uid, rlimits, seccomp);
3. the child sends back only its outputs and its instruction records; this process checks
   every size before reading, validates the records, and computes the timing itself by
   replaying them (``replay.py``), so nothing the child says about time is used;
4. this process survives any kernel text: the text is size-limited and compiled only in
   the child, the reply has hard caps and a deadline, the kernel's own output never
   reaches this process's stdout.
"""

from __future__ import annotations

import math
import os
import signal
import time
from typing import TYPE_CHECKING, Any

import numpy as np
from pydantic import BaseModel, Field

from sage.npu import sandbox_wire as wire
from sage.text import PRINTED_CHARS, clean

if TYPE_CHECKING:
    from sage.npu.errors import NpuError
    from sage.npu.execute import OutputSpec
    from sage.npu.hardware import HardwareSpec
    from sage.npu.results import KernelRun

GRACE_SECONDS = 2.0
DEFAULT_INSTRUCTION_BUDGET = 5_000_000


class Limits(BaseModel):
    """Resource limits of one sandboxed evaluation."""

    cpu_seconds: float = Field(120, gt=0, description="CPU time of the child (RLIMIT_CPU)")
    memory_mb: int = Field(4096, gt=0, description="address space the kernel may add on top of the child's start")
    wall_seconds: float = Field(180, gt=0, description="wall-clock deadline enforced by the parent")


def run_sandboxed(
    source: str,
    args: list[Any],
    kwargs: dict[str, Any] | None = None,
    *,
    preset: str | HardwareSpec = "ascend910b2",
    filename: str = "kernel.py",
    trace: bool = False,
    expected: list[OutputSpec] | None = None,
    limits: Limits | None = None,
    instruction_budget: int = DEFAULT_INSTRUCTION_BUDGET,
) -> KernelRun:
    """Run `source` on `args` in a locked-down child and time it here.

    Never raises for anything the kernel does: refusals, timeouts, memory exhaustion,
    crashes and malformed replies come back as `KernelRun.error`.
    """
    from sage.npu.execute import FunctionalRun, time_run
    from sage.npu.hardware import load_preset

    spec = load_preset(preset) if isinstance(preset, str) else preset
    reply = run_functional_sandboxed(source, args, kwargs, preset=spec, filename=filename, expected=expected,
                                     limits=limits, instruction_budget=instruction_budget)
    if isinstance(reply, FunctionalRun):
        return time_run(reply, spec, trace=trace)
    return reply


def run_functional_sandboxed(
    source: str,
    args: list[Any],
    kwargs: dict[str, Any] | None = None,
    *,
    preset: str | HardwareSpec = "ascend910b2",
    filename: str = "kernel.py",
    expected: list[OutputSpec] | None = None,
    limits: Limits | None = None,
    instruction_budget: int = DEFAULT_INSTRUCTION_BUDGET,
) -> Any:
    """The child's half of `run_sandboxed`: its checked outputs and instruction records (a
    `FunctionalRun`), not yet timed, or the `KernelRun` of what went wrong. The records do not
    depend on the preset's costs, so one run can be timed on several presets
    (`execute.time_run`; benchmarks/sensitivity.py does)."""
    from sage.npu.errors import SandboxError
    from sage.npu.hardware import load_preset
    from sage.npu.restricted import MAX_SOURCE_BYTES

    limits = limits or Limits()
    spec = load_preset(preset) if isinstance(preset, str) else preset
    if not isinstance(source, str) or len(source) > MAX_SOURCE_BYTES:
        return _error_run(SandboxError(f"the kernel file is larger than {MAX_SOURCE_BYTES // 1024} KB"))
    header = {"source": source, "filename": filename, "preset": spec.model_dump(mode="json"),
              "expected": None if expected is None else [e.model_dump(mode="json") for e in expected],
              "limits": limits.model_dump(), "instruction_budget": instruction_budget}
    return _run_child(header, list(args), dict(kwargs or {}), limits, expected)


def _run_child(header: dict, args: list, kwargs: dict, limits: Limits,
               expected: list[OutputSpec] | None) -> Any:
    from sage.npu.zygote import Zygote

    job_fd = wire.write_job(header, args, kwargs)
    read_fd, write_fd = os.pipe()
    zygote = Zygote.get()
    try:
        pid = zygote.start(job_fd, write_fd)
    finally:
        os.close(job_fd)
        os.close(write_fd)
    try:
        outcome = _receive(read_fd, pid, limits, expected)
    finally:
        os.close(read_fd)
        _kill(pid, signal.SIGKILL)  # done or not, the child has nothing more to say
    status, cpu = zygote.wait(pid)
    if isinstance(outcome, _Silence):
        return _death_run(status, cpu, limits, outcome.timed_out)
    return outcome


class _Silence:
    """The child gave no complete reply (timed out, or died)."""

    def __init__(self, timed_out: bool):
        self.timed_out = timed_out


def _receive(fd: int, pid: int, limits: Limits, expected: list[OutputSpec] | None) -> Any:
    from sage.npu.errors import KernelRuntimeError

    reader = wire.Reader(fd, time.monotonic() + limits.wall_seconds)
    try:
        try:
            header = wire.read_header(reader)
        except wire.ReplyTimeout:
            # SIGUSR1 makes the child raise KernelTimeout where it is, so the reply names the line.
            _kill(pid, signal.SIGUSR1)
            reader.deadline = time.monotonic() + GRACE_SECONDS
            header = wire.read_header(reader)
        reader.deadline = max(reader.deadline, time.monotonic()) + GRACE_SECONDS + 30
        return _parse(reader, header, limits, expected)
    except wire.ReplyTimeout:
        return _Silence(timed_out=True)
    except EOFError:
        return _Silence(timed_out=False)
    except wire.ReplyError as exc:
        return _error_run(KernelRuntimeError(f"malformed reply from the kernel process: {exc}"))


def visible(text: str) -> str:
    """Kernel text as it may be shown (sage/text.py: escapes for control, bidi and zero-width
    characters, no lone surrogate): what a kernel prints or raises reaches terminals and files."""
    return clean(text)


def _parse(reader: wire.Reader, header: dict, limits: Limits, expected: list[OutputSpec] | None) -> Any:
    from sage.npu.execute import FunctionalRun
    from sage.npu.results import ErrorInfo
    from sage.npu.sim.runtrace import MAX_TRACE_BYTES, TraceError, decode

    error = header.get("error")
    printed = clean(str(header.get("printed") or ""), PRINTED_CHARS)
    gaps = _isolation_gaps(header.get("isolation"))
    if error is not None:
        try:
            info = ErrorInfo.model_validate(error)
        except ValueError as exc:
            raise wire.ReplyError(f"error entry is malformed: {exc}") from None
        return FunctionalRun(None, None, info, printed, gaps)
    specs = wire.output_specs(header)
    if specs is None:
        raise wire.ReplyError("a reply with neither outputs nor an error")
    _check_outputs(specs, expected, limits)
    outputs = []
    for shape, dtype in specs:
        array = np.empty(shape, dtype)
        reader.into(memoryview(array.reshape(-1).view(np.uint8)))
        outputs.append(array)
    nbytes = header.get("trace_bytes")
    if not isinstance(nbytes, int) or isinstance(nbytes, bool) or not 0 < nbytes <= MAX_TRACE_BYTES:
        raise wire.ReplyError(f"trace of {nbytes!r} bytes is out of range")
    data = bytearray(nbytes)
    reader.into(memoryview(data))
    try:
        trace = decode(data)
    except TraceError as exc:
        raise wire.ReplyError(f"the instruction trace is invalid: {exc}") from None
    return FunctionalRun(outputs, trace, None, printed, gaps)


def _isolation_gaps(report: Any) -> list[str]:
    """The layers the child could not apply, one line each (a missing report: all of them)."""
    from sage.npu.isolation import IsolationReport

    try:
        parsed = IsolationReport.model_validate(report)
    except ValueError:
        return ["OS isolation: the child sent no isolation report"]
    return [f"{layer.name}: {layer.detail}" for layer in parsed.layers if not layer.active]


def _check_outputs(specs: list, expected: list[OutputSpec] | None, limits: Limits) -> None:
    if expected is not None:
        got = [(list(s), wire.dtype_name(d)) for s, d in specs]
        want = [(list(e.shape), e.dtype) for e in expected]
        if got != want:
            raise wire.ReplyError(f"outputs {got} are not the {want} the child was told to check")
        return
    total = sum(math.prod(s) * d.itemsize for s, d in specs)
    if total > limits.memory_mb * 2**20:
        raise wire.ReplyError(f"{total} bytes of outputs announced, more than the memory limit")


def _kill(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def _error_run(error: NpuError) -> KernelRun:
    from sage.npu.results import KernelRun

    return KernelRun(outputs=None, error=error.info(), profile=None)


def _death_run(status: int, cpu: float, limits: Limits, timed_out: bool) -> KernelRun:
    """The child ended without a complete reply: name what ended it."""
    from sage.npu.errors import KernelRuntimeError, KernelTimeout, MemoryLimitError
    from sage.npu.sandbox_child import CPU_TIMEOUT, WALL_TIMEOUT

    sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
    if sig == signal.SIGXCPU or cpu >= math.ceil(limits.cpu_seconds):
        return _error_run(KernelTimeout(CPU_TIMEOUT.format(seconds=limits.cpu_seconds)))
    if timed_out:
        return _error_run(KernelTimeout(WALL_TIMEOUT.format(seconds=limits.wall_seconds)))
    if sig == signal.SIGKILL:
        return _error_run(MemoryLimitError(
            "the kernel process was killed (SIGKILL), most likely by the system's out-of-memory killer"))
    if sig == signal.SIGSYS:
        return _error_run(KernelRuntimeError("the kernel process made a system call the sandbox forbids"))
    if sig is not None:
        return _error_run(KernelRuntimeError(f"the kernel process crashed with signal {signal.Signals(sig).name}"))
    code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else status
    return _error_run(KernelRuntimeError(f"the kernel process exited (code {code}) without a result"))
