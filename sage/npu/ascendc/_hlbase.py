"""What the high-level APIs share: operand checks, the temporary buffer (a sharedTmpBuffer
argument, or the UB left after InitBuffer as Ascend C's PopStackBuffer takes it), the split
of that buffer into per-chunk work tensors, and PipeBarrier(PIPE_V) between steps.

A high-level API is a sequence of the DSL's basic vector instructions: each records its own
V instruction, so its cost, its races and its numerics are those of the expansion.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterator

import numpy as np

from sage.npu import dtypes
from sage.npu.errors import CapacityError, KernelRuntimeError
from sage.npu.sim.core import Slot, current_core
from sage.npu.ascendc import _checks as chk
from sage.npu.ascendc import sync
from sage.npu.ascendc._vecbase import require
from sage.npu.ascendc.tensors import LocalTensor

BLOCK_ELEMS = 32  # Ascend C rounds work-tensor lengths down to ONE_BLK_SIZE (32) elements
_STACKS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # core -> {UB offset: stack Slot}


def barrier() -> None:
    """PipeBarrier<PIPE_V>() as the implementations put between dependent steps."""
    sync.PipeBarrier(sync.PIPE_V)


def steps(n: int, *seq) -> None:
    """Run each (instruction, operands...) on `n` elements, a PipeBarrier(PIPE_V) after each."""
    for op, *args in seq:
        op(*args, n)
        barrier()


def operands(name: str, dst, src, count) -> tuple[np.dtype, int]:
    """dst and src in UB with one dtype the table lists for `name`, holding `count` elements."""
    dt = chk.same_dtype(name, dst, src)
    for t in (dst, src):
        chk.local(t, name, "UB")
    require(name, dt)
    count = chk.count_arg(count, f"{name} count")
    for t in (dst, src):
        chk.fits(t, count, name)
    return dt, count


def stack_buffer(name: str) -> LocalTensor:
    """The UB not taken by InitBuffer (Ascend C's PopStackBuffer<uint8_t, TPosition::LCM>)."""
    core = current_core(name)
    ub = core.spaces["UB"]
    free = ub.capacity - ub.used
    if free < 32:
        raise CapacityError(f"{name} without a sharedTmpBuffer works in the UB that InitBuffer left free, and "
                            f"none is left ({ub.used} of {ub.capacity} B taken): pass a sharedTmpBuffer")
    per_core = _STACKS.setdefault(core, {})
    slot = per_core.get(ub.used)
    if slot is None:
        slot = per_core[ub.used] = Slot(ub, ub.used, free // 32 * 32, f"{name} stack buffer (UB @{ub.used})")
        slot.allocated = True
    return LocalTensor.whole(slot, dtypes.uint8, slot.alloc_gen)


def temp_buffer(name: str, tmp, min_bytes: int, *operands_) -> LocalTensor:
    """The work buffer as uint8 bytes (whole 32 B blocks): `tmp`, or the stack buffer if None.
    Too small is an error naming the API's documented minimum."""
    if tmp is None:
        tmp = stack_buffer(name)
    else:
        chk.local(tmp, f"{name} sharedTmpBuffer", "UB")
        chk.aligned(tmp, f"{name} sharedTmpBuffer")
        for t in operands_:
            if t._slot is tmp._slot and _overlap(t, tmp):
                raise KernelRuntimeError(f"{name}: sharedTmpBuffer overlaps an operand (Ascend C forbids it)")
    nbytes = tmp._size * tmp._dtype.itemsize // 32 * 32
    if nbytes < min_bytes:
        raise KernelRuntimeError(f"{name}: the temporary buffer holds {nbytes} B, it needs at least {min_bytes} B "
                                 f"(Get{name}MaxMinTmpSize's minimum); a larger one makes fewer, longer steps")
    return LocalTensor(tmp._slot, tmp._off, nbytes, dtypes.uint8, tmp._gen)


def _overlap(a: LocalTensor, b: LocalTensor) -> bool:
    a_lo, a_hi = a._off, a._off + a._size * a._dtype.itemsize
    b_lo, b_hi = b._off, b._off + b._size * b._dtype.itemsize
    return a_lo < b_hi and b_lo < a_hi


def split(tmp: LocalTensor, dt: np.dtype, parts: int, unit: int = BLOCK_ELEMS) -> tuple[int, list[LocalTensor]]:
    """`parts` work tensors of `dt` carved from `tmp`, each of `stack` elements (a multiple of `unit`)."""
    view = tmp.ReinterpretCast(dt)
    stack = view._size // parts // unit * unit
    if stack == 0:
        raise KernelRuntimeError(f"the temporary buffer of {tmp._size} B cannot hold {parts} work tensors of "
                                 f"{unit} {dt.name} elements")
    return stack, [view[i * stack] for i in range(parts)]


def tmp_and_count(tmp, count):
    """The two overloads: (sharedTmpBuffer, count), or (count) with the temp from free UB."""
    return (None, tmp) if count is None else (tmp, count)


def chunks(count: int, size: int) -> Iterator[tuple[int, int]]:
    """(offset, length) of the rounds and the tail, as the implementations loop."""
    for off in range(0, count - count % size, size):
        yield off, size
    if count % size:
        yield count - count % size, count % size
