"""Shared argument checks and strided views of the DSL's instructions."""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import as_strided

from sage.npu.errors import AlignmentError, BoundsError, KernelRuntimeError
from sage.npu.ascendc.tensors import GlobalTensor, LocalTensor


def count_arg(value, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise KernelRuntimeError(f"{what} must be an int, got {type(value).__name__} ({value!r})")
    return int(value)


def local(t, what: str, position: str | None = None) -> LocalTensor:
    if not isinstance(t, LocalTensor):
        raise KernelRuntimeError(f"{what} needs a LocalTensor, got {type(t).__name__}")
    t._live(what)
    if position is not None and t._slot.space.name != position:
        raise KernelRuntimeError(f"{what} needs a tensor in {position}, got one in {t._slot.space.name}")
    return t


def aligned(t: LocalTensor, what: str, unit: int = 32) -> None:
    if t.addr % unit:
        raise AlignmentError(
            f"{what}: local address {t.addr} ({t._slot.space.name}) is not {unit} B aligned; "
            f"views t[offset] used by vector and copy instructions must start on a {unit} B boundary")


def fits(t: LocalTensor, count: int, what: str) -> None:
    if count < 0 or count > t._size:
        raise BoundsError(f"{what}: {count} elements do not fit in a tensor of {t._size} elements")


def same_dtype(what: str, *tensors) -> np.dtype:
    for i, t in enumerate(tensors):
        if t.__class__ is not LocalTensor:
            raise KernelRuntimeError(f"{what}: operand {i + 1} must be a LocalTensor, got {type(t).__name__}")
    dt = tensors[0]._dtype
    for t in tensors[1:]:
        if t._dtype is not dt and t._dtype != dt:
            raise KernelRuntimeError(
                f"{what}: operands must share one dtype, got {dt.name} and {t._dtype.name} (Cast first)")
    return dt


def rows_view(arr: np.ndarray, start: int, rows: int, row_elems: int, pitch: int, what: str, where: str) -> np.ndarray:
    """A (rows, row_elems) view of ``arr`` starting at ``start`` with row pitch ``pitch`` elements."""
    if rows <= 0 or row_elems < 0:
        raise KernelRuntimeError(f"{what}: block count must be >= 1 and block length >= 0")
    last = start + (rows - 1) * pitch + row_elems
    if start < 0 or last > arr.size or pitch < 0:
        raise BoundsError(f"{what}: out of bounds: elements [{start}, {last}) of {where} are accessed, it holds {arr.size}")
    if rows == 1 or pitch == row_elems:
        return arr[start:start + rows * row_elems].reshape(rows, row_elems) if rows * row_elems else arr[start:start].reshape(rows, 0)
    base = arr[start:]
    return as_strided(base, shape=(rows, row_elems), strides=(pitch * arr.itemsize, arr.itemsize), writeable=True)


def gm_tensor(t, what: str) -> GlobalTensor:
    if not isinstance(t, GlobalTensor):
        raise KernelRuntimeError(f"{what} needs a GlobalTensor, got {type(t).__name__}")
    t._require()
    return t
