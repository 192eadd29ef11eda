"""The front end of the export: run a DSL kernel once and record, per block, what it asked the
machine to do.

The kernel runs as `sage npu run` runs it (the restricted language, the simulator's checks),
block by block (no lane groups: each block's own values are plain Python values), while the
DSL names a kernel file imports are replaced by recording wrappers. Each call that moves or
computes data is kept with its operands as they were at the call (which UB buffer and byte
offset, which GM tensor and element offset, element counts, scalars), so the emitter sees
the program each block ran, loops unrolled and Python arithmetic already done. What is not
recorded cannot reach the chip: queues, flags and TPipe bookkeeping become the vendor
pipeline's memory planning and sync insertion.

A value read from tensor data into Python (GetValue, or the host reading an output) makes
the program depend on data the export does not see; such a call is recorded as a refusal.
"""

from __future__ import annotations

import sys
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import numpy as np

import sage.npu.ascendc as dsl
from sage.export.scalars import Taint, Traced, set_taint, traced_math
from sage.npu import restricted
from sage.npu.ascendc import handles, host
from sage.npu.ascendc.tensors import GlobalTensor, LocalTensor
from sage.npu import execute
from sage.npu.hardware import HardwareSpec
from sage.npu.results import ErrorInfo
from sage.npu.sim import core as core_mod
from sage.npu.sim.session import Session

# DSL calls the emitter turns into IR (sage/export/emit.py has the table of each)
DATA_CALLS = frozenset({
    "DataCopy", "DataCopyPad", "Add", "Sub", "Mul", "Div", "Max", "Min", "And", "Or", "Adds", "Muls", "Maxs",
    "Mins", "Exp", "Ln", "Abs", "Reciprocal", "Sqrt", "Rsqrt", "Relu", "Not", "Duplicate", "Cast", "ReduceSum",
    "ReduceMax", "ReduceMin"})
# DSL calls with nothing to export: block index and count are read again on the chip
# (hivm.hir.get_block_idx), queue and flag calls are the vendor pipeline's sync insertion, the
# rest are host-side or constructors of parameter structs.
QUIET_CALLS = frozenset({
    "GetBlockIdx", "GetBlockNum", "SetFlag", "WaitFlag", "PipeBarrier", "sizeof", "kernel", "empty", "empty_like",
    "printf", "DumpTensor"})
# GetValue/SetValue of the tensor handle classes: scalar access to tensor data
SCALAR_METHODS = ("GetValue", "SetValue")


@dataclass(frozen=True)
class Gm:
    """A GM operand: tensor `buf` (allocation id), from element `off`, of `dtype`."""
    buf: int
    off: int
    dtype: np.dtype


@dataclass(frozen=True)
class Ub:
    """A local-memory operand: buffer `slot` ((space, byte address, bytes) in its memory) from byte `off`."""
    slot: tuple[str, int, int]
    off: int
    dtype: np.dtype


@dataclass
class Call:
    name: str
    args: tuple        # Gm / Ub / plain values / parameter structs as dicts / enums
    line: int | None


@dataclass
class Launch:
    name: str
    line: int | None                   # the kernel function's def line
    block_dim: int
    # the GM tensors passed, in order: (allocation id, dtype, elements, an input of forward()); allocation
    # ids count forward()'s tensor arguments first, in order (sage.npu.execute)
    gm_args: list[tuple[int, np.dtype, int, bool]]
    blocks: dict[int, list[Call]] = field(default_factory=dict)


@dataclass
class Recording:
    launches: list[Launch]
    error: ErrorInfo | None = None        # the kernel's own error (it did not run)
    host_reads: int = 0                   # reads of tensor data by forward()
    taint: tuple[str, int | None] | None = None   # the first use of tensor data the IR cannot follow
    outputs: list[int] = field(default_factory=list)   # allocation ids of the GM tensors forward() returns


def _operand(value: Any) -> Any:
    """A call argument as the emitter needs it, copied at the call (a GlobalTensor can be re-pointed)."""
    if handles.is_handle(value):
        value = handles.unwrap(value)
    if isinstance(value, LocalTensor):
        slot = value._slot
        return Ub((slot.space.name, slot.addr, slot.nbytes), value._off, value._dtype)
    if isinstance(value, GlobalTensor):
        return Gm(value._buf.id, value._off, value._buf.dtype) if value._buf is not None else None
    if hasattr(value, "__dataclass_fields__"):
        return {k: getattr(value, k) for k in value.__dataclass_fields__}
    return value


class _Recorder:
    def __init__(self, filename: str) -> None:
        self.filename = filename
        self.launches: list[Launch] = []
        self.taint = Taint(filename, lambda: self.line())
        self.outputs: list[int] = []

    def line(self) -> int | None:
        frame = sys._getframe(2)
        while frame is not None and frame.f_code.co_filename != self.filename:
            frame = frame.f_back
        return frame.f_lineno if frame is not None else None

    def add(self, name: str, args: tuple) -> tuple | None:
        """Record a call of the running block; its (block key, index in the block's program)."""
        core = core_mod._current
        if core is None or not self.launches:
            return None  # host-side calls (empty, kernel, ...) are not part of a block's program
        block = self.launches[-1].blocks.setdefault(int(core.block_idx), [])
        block.append(Call(name, tuple(_operand(a) for a in args), self.line()))
        return (len(self.launches) - 1, int(core.block_idx)), len(block) - 1

    def traced_get(self, fn: Callable) -> Callable:
        """LocalTensor.GetValue: a float read comes back as a Traced load of this call."""
        def recorded(*args, **kwargs):
            where = self.add("LocalTensor.GetValue", args)
            value = fn(*args, **kwargs)
            if where is not None and isinstance(value, float) and not kwargs:
                return Traced(value, ("load", *where))
            return value
        return recorded

    def wrap(self, name: str, fn: Callable) -> Callable:
        def recorded(*args, **kwargs):
            self.add(name if not kwargs else f"{name} (with keyword arguments)", args)
            return fn(*args, **kwargs)
        return recorded


@contextmanager
def _recording(rec: _Recorder) -> Iterator[None]:
    """The DSL's public names and scalar methods replaced by recording wrappers, and each launch
    noted; everything put back on leaving."""
    saved: list[tuple[Any, str, Any]] = []

    def patch(owner: Any, name: str, new: Any) -> None:
        saved.append((owner, name, owner.__dict__[name] if isinstance(owner, type) else getattr(owner, name)))
        setattr(owner, name, new)

    for name in dsl.__all__:
        value = getattr(dsl, name)
        if callable(value) and not isinstance(value, type) and name not in QUIET_CALLS:
            patch(dsl, name, rec.wrap(name, value))
    for cls in (dsl.LocalTensor, dsl.GlobalTensor):
        for method in SCALAR_METHODS:
            original = cls.__dict__[method]
            traced = cls is dsl.LocalTensor and method == "GetValue"
            patch(cls, method, rec.traced_get(original) if traced else rec.wrap(f"{cls.__name__}.{method}", original))
    for name in restricted.MATH_NAMES:
        value = getattr(restricted.KERNEL_MATH, name)
        if callable(value):
            patch(restricted.KERNEL_MATH, name, traced_math(name, value))
    # a Traced is a DSL argument as a float is (handles.py lets only known classes through)
    new_type = Traced not in handles._ARGUMENT_TYPES
    handles._ARGUMENT_TYPES.add(Traced)
    handles._PASSING.add(Traced)
    set_taint(rec.taint)
    launch = Session.launch

    def noted(session, fn, name, block_dim, args, kwargs, on_block_end=None):
        tensors = [handles.unwrap(a) for a in args if handles.is_handle(a)]
        gm = [(t._buf.id, t._buf.dtype, t._buf.data.size, t._buf.is_input) for t in tensors
              if isinstance(t, host.GmHandle)]
        code = getattr(fn, "__code__", None)
        rec.launches.append(Launch(name, code.co_firstlineno if code else None, int(block_dim), gm))
        return launch(session, fn, name, block_dim, args, kwargs, on_block_end)
    patch(Session, "launch", noted)
    collect = execute._collect

    def returned(result, expected):
        items = list(result) if isinstance(result, (tuple, list)) else [result]
        for item in items:
            item = handles.unwrap(item) if handles.is_handle(item) else item
            if isinstance(item, host.GmHandle):
                rec.outputs.append(item._buf.id)
        return collect(result, expected)
    patch(execute, "_collect", returned)
    try:
        yield
    finally:
        set_taint(None)
        if new_type:
            handles._ARGUMENT_TYPES.discard(Traced)
            handles._PASSING.discard(Traced)
        for owner, name, value in reversed(saved):
            setattr(owner, name, value)


def record(source: str, args: list, kwargs: dict | None, *, spec: HardwareSpec, filename: str,
           instruction_budget: int = 5_000_000) -> Recording:
    """Run the kernel file's forward() once on `args` (one case's inputs), block by block, recording."""
    rec = _Recorder(filename)
    with _recording(rec):
        run = execute.run_functional(source, args, kwargs, spec=spec, filename=filename,
                             instruction_budget=instruction_budget, lockstep=False)
    if run.error is not None:
        return Recording([], error=run.error)
    return Recording(rec.launches, host_reads=len(run.trace.syncs) if run.trace else 0, taint=rec.taint.first,
                     outputs=rec.outputs)
