"""Run a kernel file in-process (trusted caller): compile, call forward(), collect outputs and profile.

Untrusted kernel text goes through ``sage.npu.sandbox.run_sandboxed``, which calls this in a
child process. Kernel errors never raise here: they come back in ``KernelRun.error`` with the
line of the kernel file where they happened.
"""

from __future__ import annotations

import ast
import gc
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np
from pydantic import BaseModel

from sage.npu import dtypes
from sage.npu.ascendc import handles, host
from sage.npu.errors import (KernelRuntimeError, LaunchError, MemoryLimitError, NpuError, OutputSpecError)
from sage.npu.hardware import HardwareSpec, load_preset
from sage.npu.pages import pages_for
from sage.npu.profile import build_profile
from sage.npu.replay import replay
from sage.npu.restricted import KernelNamespace, PrintSink, compile_kernel
from sage.npu.results import ErrorInfo, KernelRun
from sage.npu.sim import core as core_mod
from sage.npu.sim.blas import single_threaded_blas
from sage.npu.sim.lanes import Divergence, LockstepAbort, NotLaneable
from sage.npu.sim import tries
from sage.npu.sim.runtrace import RunTrace
from sage.npu.sim.session import Session
from sage.npu.trace import build_trace


class OutputSpec(BaseModel):
    shape: tuple[int, ...]
    dtype: str  # numpy dtype name, "bfloat16" for bf16


def _kernel_line(exc: BaseException, filename: str) -> int | None:
    """The innermost frame of the traceback that is in the kernel file."""
    line = None
    for frame, lineno in traceback.walk_tb(exc.__traceback__):
        if frame.f_code.co_filename == filename:
            line = lineno
    return line


def _where(exc: BaseException, filename: str) -> str:
    """Where outside the kernel file the exception was raised (a DSL call given bad arguments)."""
    frames = list(traceback.walk_tb(exc.__traceback__))
    if not frames or frames[-1][0].f_code.co_filename == filename:
        return ""
    return f" (raised in {frames[-1][0].f_code.co_name}() of the DSL, called from the kernel line)"


def _message(err: BaseException, lockstep: bool) -> str:
    """str(err) of an exception kernel code raised, or a stand-in: its arguments are kernel data
    (a handle whose block ended, an int of 5,000 digits, a lane group's value), and turning
    them into text can raise in turn, which must not become an error of sage's own."""
    try:
        return str(err)
    except (Divergence, NotLaneable):
        if lockstep:  # a lane group's value in the message: the run is made again block by block
            raise LockstepAbort() from None
        return f"(the {type(err).__name__}'s message could not be shown)"
    except BaseException:  # noqa: BLE001 - whatever formatting kernel data raised
        return f"(the {type(err).__name__}'s message could not be shown)"


def _forward_return_line(source: str) -> int | None:
    """The line of forward()'s return statement (its def line if it has several)."""
    try:
        body = ast.parse(source).body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    for node in body:
        if isinstance(node, ast.FunctionDef) and node.name == "forward":
            returns = [n.lineno for n in ast.walk(node) if isinstance(n, ast.Return)]
            return returns[0] if len(returns) == 1 else node.lineno
    return None


def _to_handle(session: Session, value, where: str):
    if isinstance(value, np.ndarray):
        try:
            dtypes.as_dtype(value.dtype)
        except TypeError as err:
            raise LaunchError(f"{where}: {err}") from None
        with pages_for(value.nbytes):
            data = np.array(value, copy=True, order="C")
        return handles.wrap(host.GmHandle(session.allocate(data, is_input=True), tuple(value.shape)))
    if isinstance(value, (list, tuple)) and any(isinstance(v, np.ndarray) for v in value):
        # a list of tensors (torch.cat's argument) holds device tensors, as under torch_npu:
        # the host code gets handles, never the data
        return type(value)(_to_handle(session, v, f"{where}[{i}]") for i, v in enumerate(value))
    if not isinstance(value, _PLAIN_ARGS):
        raise LaunchError(f"{where}: a {type(value).__name__} cannot be passed to a kernel file")
    return value


_PLAIN_ARGS = (type(None), bool, int, float, str, tuple, list)


def _collect(result, expected: list[OutputSpec] | None) -> list[np.ndarray]:
    items = list(result) if isinstance(result, (tuple, list)) else [result]
    outputs = []
    returned: set[int] = set()
    for i, item in enumerate(items):
        item = handles.unwrap(item) if handles.is_handle(item) else item
        if not isinstance(item, host.GmHandle):
            raise OutputSpecError(f"forward() must return GM tensors made with empty()/empty_like(); "
                                  f"output {i} is {type(item).__name__}")
        if item._buf.is_input:
            raise OutputSpecError(f"output {i} is (a view of) an input: outputs must be fresh allocations "
                                  f"made with empty()/empty_like()")
        # The run's GM dies with it, so an output is a view of its buffer; a buffer returned twice is
        # copied the second time, so that no two outputs share memory (a full copy of a large
        # output costs as much as the kernel's functional run: fresh pages fault one by one)
        out = item._buf.data[:item.numel()].reshape(item.shape)
        outputs.append(out.copy() if item._buf.id in returned else out)
        returned.add(item._buf.id)
    if expected is not None:
        if len(expected) != len(outputs):
            raise OutputSpecError(f"forward() returned {len(outputs)} output(s), the reference returns {len(expected)}")
        for i, (out, spec) in enumerate(zip(outputs, expected)):
            if tuple(out.shape) != tuple(spec.shape) or out.dtype.name != spec.dtype:
                raise OutputSpecError(f"output {i} is {out.dtype.name}{list(out.shape)}, "
                                      f"the reference gives {spec.dtype}{list(spec.shape)}")
    return outputs


# Young objects the cyclic collector lets accumulate during a run (Python's default is 700): a run
# allocates a few records, gates and views per simulated instruction, nearly all of them alive to
# the end, and collecting every 700 of them cost 7-11 % of the functional run (2 % at 50 000).
# Cycles a kernel makes are still collected, 50 000 objects at a time.
GC_YOUNG_THRESHOLD = 50_000


@contextmanager
def _fewer_collections() -> Iterator[None]:
    before = gc.get_threshold()
    gc.set_threshold(max(before[0], GC_YOUNG_THRESHOLD), *before[1:])
    try:
        yield
    finally:
        gc.set_threshold(*before)


@dataclass
class FunctionalRun:
    """What running a kernel file leaves behind before any timing: outputs and records."""

    outputs: list[np.ndarray] | None
    trace: RunTrace | None
    error: ErrorInfo | None
    printed: str = ""
    isolation_gaps: list[str] = field(default_factory=list)


def run_functional(source: str, args: list, kwargs: dict | None = None, *, spec: HardwareSpec,
                   filename: str = "kernel.py", expected: list[OutputSpec] | None = None,
                   instruction_budget: int = 20_000_000, lockstep: bool = True) -> FunctionalRun:
    """Run the kernel file's forward() on `args`: outputs, instruction records, or the kernel's error.

    `lockstep=False` runs every block alone (sage.npu.sim.lanes explains lane groups; the two
    give the same outputs, records and errors, which tests/npu/test_lanes.py checks). A lane
    group's value used after its launch has the whole run made again block by block
    (LockstepAbort), from a fresh namespace and fresh GM."""
    if lockstep:
        try:
            return _run_functional(source, args, kwargs, spec, filename, expected, instruction_budget, True)
        except LockstepAbort:
            pass
    return _run_functional(source, args, kwargs, spec, filename, expected, instruction_budget, False)


def _run_functional(source: str, args: list, kwargs: dict | None, spec: HardwareSpec, filename: str,
                    expected: list[OutputSpec] | None, instruction_budget: int, lockstep: bool) -> FunctionalRun:
    session = Session(spec, kernel_file=filename, instruction_budget=instruction_budget, lockstep=lockstep)
    try:
        code = compile_kernel(source, filename)
    except NpuError as err:
        return FunctionalRun(None, None, err.info())
    printer = PrintSink()
    printer.order = session.print_order
    guards = KernelNamespace(printer)
    namespace = guards.globals(filename)

    def state_roots(launch: tuple) -> set[int] | None:  # what a launch try may not change (sim/tries.py)
        names = [v for k, v in namespace.items() if not k.startswith("_")]
        return tries.preexisting((launch, names), namespace, guards.classes, guards.writable, handles.handle_types())
    session.state_roots = state_roots
    error: NpuError | None = None
    outputs = None
    handles.reset()
    host.set_session(session)
    try:
        with np.errstate(all="ignore"), single_threaded_blas(), _fewer_collections():
            exec(code, namespace)
            forward = namespace.get("forward")
            if not callable(forward):
                raise LaunchError("the kernel file must define forward(...) (the host side)")
            gm_args = [_to_handle(session, a, f"argument {i}") for i, a in enumerate(args)]
            kw = {k: _to_handle(session, v, f"parameter {k}") for k, v in (kwargs or {}).items()}
            outputs = _collect(forward(*gm_args, **kw), expected)
    except (Divergence, NotLaneable):
        # a value of a lane group used after its launch (kept in a Python object): block by block
        # no such value exists, so the whole run is made again that way
        if not lockstep:
            raise
        raise LockstepAbort() from None
    except OutputSpecError as err:
        error = err
        if error.line is None:
            error.line = _forward_return_line(source)
    except NpuError as err:
        error = err
        if error.line is None:
            error.line = _kernel_line(err, filename)
    except MemoryError as err:
        error = MemoryLimitError(f"the kernel ran out of memory ({err})", _kernel_line(err, filename))
    except RecursionError as err:
        error = KernelRuntimeError(f"RecursionError: {err}", _kernel_line(err, filename))
    except Exception as err:  # noqa: BLE001 - any other exception in kernel code is the kernel's bug, reported with its line
        error = KernelRuntimeError(f"{type(err).__name__}: {_message(err, lockstep)}{_where(err, filename)}",
                                   _kernel_line(err, filename))
    finally:
        host.set_session(None)
        core_mod.set_current(None)
        try:
            handles.reset()
        except NpuError as err:  # the CPU limit can fire while a kernel's huge handle table is freed
            error = error or err
    if error is not None:
        return FunctionalRun(None, None, error.info(), printer.text())
    return FunctionalRun(outputs, session.trace, None, printer.text())


def time_run(run: FunctionalRun, spec: HardwareSpec, *, trace: bool = False) -> KernelRun:
    """Replay the run's records on `spec`: the profile (and a Chrome trace when asked for)."""
    extra = {"printed": run.printed, "isolation_gaps": run.isolation_gaps}
    if run.error is not None or run.trace is None:
        return KernelRun(None, run.error, None, **extra)
    try:
        timed = replay(run.trace, spec, keep=trace)
    except NpuError as err:  # a launch that cannot run on the chip (deadlock, SyncAll in waves, ...)
        return KernelRun(None, err.info(), None, **extra)
    essential = sum(n for n, is_input in run.trace.allocations if is_input)
    essential += sum(o.nbytes for o in run.outputs or [])
    return KernelRun(run.outputs, None, build_profile(timed, essential, syncs=run.trace.syncs),
                     build_trace(timed) if trace else None,
                     **extra)


def run_kernel_source(source: str, args: list, kwargs: dict | None = None, *,
                      preset: str | HardwareSpec = "ascend910b2", filename: str = "kernel.py",
                      trace: bool = False, expected: list[OutputSpec] | None = None,
                      instruction_budget: int = 20_000_000) -> KernelRun:
    """Run and time a kernel file in this process (trusted callers; untrusted text goes
    through ``sage.npu.sandbox.run_sandboxed``)."""
    spec = preset if isinstance(preset, HardwareSpec) else load_preset(preset)
    run = run_functional(source, args, kwargs, spec=spec, filename=filename, expected=expected,
                         instruction_budget=instruction_budget)
    return time_run(run, spec, trace=trace)
