"""Reductions (vcadd / vcmax / vcgadd), Brcb: sums are binary trees in the operand dtype,
one tree per 256 B repeat and again over the partial results, as the hardware does it."""

from __future__ import annotations

import enum

import numpy as np

from sage.npu import dtypes
from sage.npu.errors import KernelRuntimeError
from sage.npu.isa import legal
from sage.npu.ascendc import _checks as chk
from sage.npu.ascendc._vecbase import indexed, issue, repeat_bytes, repeat_form, repeat_index, require
from sage.npu.ascendc.params import BrcbRepeatParams
from sage.npu.ascendc.tensors import LocalTensor
from sage.npu.sim.lanes import lane_ready, plain_only


class ReduceOrder(enum.Enum):
    ORDER_VALUE_INDEX = 0
    ORDER_INDEX_VALUE = 1
    ORDER_ONLY_VALUE = 2
    ORDER_ONLY_INDEX = 3


def _identity(op, dt):
    if op is np.add:
        return dt.type(0)
    if dtypes.is_float(dt):
        return dt.type(-np.inf if op is np.maximum else np.inf)
    info = np.iinfo(dt)
    return dt.type(info.min if op is np.maximum else info.max)


def _tree_rows(rows: np.ndarray, op) -> np.ndarray:
    """Pairwise tree over the last axis (padded to a power of two with the identity)."""
    n = rows.shape[-1]
    width = 1 << max(n - 1, 0).bit_length()
    if width != n:
        pad = np.full(rows.shape[:-1] + (width - n,), _identity(op, rows.dtype), dtype=rows.dtype)
        rows = np.concatenate([rows, pad], axis=-1)
    while rows.shape[-1] > 1:
        rows = op(rows[..., 0::2], rows[..., 1::2])
    return rows[..., 0]


def _level_repeats(count: int, lanes: int) -> list[int]:
    reps = []
    n = count
    while True:
        r = -(-n // lanes)
        reps.append(r)
        if r == 1:
            return reps
        n = r


def _reduce_all(x: np.ndarray, op, lanes: int):
    """The reduction of `x` along its last axis (a lane group's `x` has one row per lane)."""
    if op is not np.add:
        return op.reduce(x, axis=-1)  # max / min do not depend on the order
    tree = x.dtype.itemsize == 2 and dtypes.is_float(x.dtype)
    lead = x.shape[:-1]
    while x.shape[-1] > 1:
        n = x.shape[-1]
        r = -(-n // lanes)
        pad = r * lanes - n
        if pad:
            x = np.concatenate([x, np.zeros(lead + (pad,), dtype=x.dtype)], axis=-1)
        rows = x.reshape(lead + (r, lanes))
        # 16-bit floats: an explicit tree rounds every partial sum to the dtype, as the hardware
        # does (numpy would accumulate half in float32); wider types: numpy's pairwise sum
        x = _tree_rows(rows, op) if tree else np.add.reduce(rows, axis=-1)
    return x[..., 0] if lead else x[0]


def _reduce(name, key, op, dst, src, work, count, calIndex=False):
    # the common case (live UB tensors of one dtype, an int count) without building the
    # checks' messages; anything else goes through the checks, which say what is wrong
    dt = dst._dtype if (dst.__class__ is LocalTensor and src.__class__ is LocalTensor
                        and src._dtype is dst._dtype) else chk.same_dtype(name, dst, src)
    require(name, dt)
    if count.__class__ is not int:
        count = chk.count_arg(count, f"{name} count")
    if count < 1:
        raise KernelRuntimeError(f"{name}: count must be >= 1")
    if not (work.__class__ is LocalTensor and work._slot.alloc_gen == work._gen and work._slot.space.name == "UB"):
        chk.local(work, f"{name} work", "UB")
    chk.fits(src, count, name)
    chk.fits(dst, 2 if calIndex else 1, name)
    isz = dt.itemsize
    lanes = repeat_bytes(name) // isz
    reps = _level_repeats(count, lanes)
    # the partial results of the first level go to work (one per repeat)
    work_bytes = min(work._size * work._dtype.itemsize, reps[0] * isz)
    spans = ((src.span(count),), (dst.span(2 if calIndex else 1), (work._slot, work._off, work._off + work_bytes)))
    issue(name, key, dst, (src, work), 0, itemsize=isz, repeats=sum(reps), spans=spans, extra_heads=len(reps) - 1)
    x = src._arr[..., :count]
    if calIndex:
        plain_only(x, f"{name} (calIndex)")
    value = _reduce_all(x, op, lanes)
    dst._arr[..., 0] = value
    if calIndex:
        idx = int(np.flatnonzero(x == value)[0]) if value == value else int(np.flatnonzero(x != x)[0])
        dst._arr[1:2].view(np.uint16 if isz == 2 else np.uint32)[0] = idx  # index bits, read via ReinterpretCast


@lane_ready
def ReduceSum(dst, src, work, count: int) -> None:
    """ReduceSum(dst, src, work, count): dst[0] = sum(src[:count]) (tree in src dtype). Cost: vcadd per level."""
    _reduce("ReduceSum", "vcadd", np.add, dst, src, work, count)


@lane_ready
def ReduceMax(dst, src, work, count: int, calIndex: bool = False) -> None:
    """ReduceMax(dst, src, work, count, calIndex=False): dst[0] = max; with calIndex dst[1] holds the index bits. Cost: vcmax per level."""
    _reduce("ReduceMax", "vcmax", np.maximum, dst, src, work, count, calIndex)


@lane_ready
def ReduceMin(dst, src, work, count: int, calIndex: bool = False) -> None:
    """ReduceMin(dst, src, work, count, calIndex=False): dst[0] = min. Cost: vcmin per level."""
    _reduce("ReduceMin", "vcmin", np.minimum, dst, src, work, count, calIndex)


def _whole(name, key, op, dst, src, mask, repeatTimes, dstRepStride, srcBlkStride, srcRepStride, order=None):
    dt = chk.same_dtype(name, dst, src)
    require(name, dt)
    mask, rep = repeat_form(name, chk.count_arg(mask, f"{name} mask"), repeatTimes, dt.itemsize)
    si = repeat_index(mask, rep, srcBlkStride, srcRepStride, dt.itemsize)
    width = 1 if order in (None, ReduceOrder.ORDER_ONLY_VALUE, ReduceOrder.ORDER_ONLY_INDEX) else 2
    di = np.arange(rep) * dstRepStride * width
    out_span = indexed(name, dst, (di[:, None] + np.arange(width)[None, :]).ravel())
    # the destination is aligned to one result (ReduceRepeat page, table 3), not to 32 B
    align = 4 if order == ReduceOrder.ORDER_ONLY_INDEX else width * dt.itemsize
    issue(name, key, dst, (src,), 0, repeats=rep, spans=((indexed(name, src, si),), (out_span,)), dst_align=align)
    # (indexed from the last axis: a lane group's operands have one more, its lanes, in front)
    rows = src._arr[..., si]
    values = _tree_rows(rows, op)
    if width == 1 and order != ReduceOrder.ORDER_ONLY_INDEX:
        dst._arr[..., di] = values
        return
    index = np.argmax(rows == values[..., None], axis=-1)
    ibits = dst._arr.view(np.uint16 if dt.itemsize == 2 else np.uint32)
    if order == ReduceOrder.ORDER_ONLY_INDEX:
        ibits[..., di] = index
    elif order == ReduceOrder.ORDER_VALUE_INDEX:
        dst._arr[..., di] = values
        ibits[..., di + 1] = index
    else:
        ibits[..., di] = index
        dst._arr[..., di + 1] = values


@lane_ready
def WholeReduceSum(dst, src, mask: int, repeatTimes: int, dstRepStride: int = 1, srcBlkStride: int = 1,
                   srcRepStride: int = 8) -> None:
    """Per repeat, sum the first ``mask`` lanes; result of repeat i at dst[i*dstRepStride]. Cost: vcadd."""
    _whole("WholeReduceSum", "vcadd", np.add, dst, src, mask, repeatTimes, dstRepStride, srcBlkStride, srcRepStride)


@lane_ready
def WholeReduceMax(dst, src, mask: int, repeatTimes: int, dstRepStride: int = 1, srcBlkStride: int = 1,
                   srcRepStride: int = 8, order: ReduceOrder = ReduceOrder.ORDER_VALUE_INDEX) -> None:
    """Per repeat, max of the first ``mask`` lanes; (value, index bits) pairs unless order=ORDER_ONLY_VALUE. Cost: vcmax."""
    _whole("WholeReduceMax", "vcmax", np.maximum, dst, src, mask, repeatTimes, dstRepStride, srcBlkStride, srcRepStride, order)


@lane_ready
def WholeReduceMin(dst, src, mask: int, repeatTimes: int, dstRepStride: int = 1, srcBlkStride: int = 1,
                   srcRepStride: int = 8, order: ReduceOrder = ReduceOrder.ORDER_VALUE_INDEX) -> None:
    """Per repeat, min of the first ``mask`` lanes; (value, index) pairs unless order=ORDER_ONLY_VALUE. Cost: vcmin."""
    _whole("WholeReduceMin", "vcmin", np.minimum, dst, src, mask, repeatTimes, dstRepStride, srcBlkStride, srcRepStride, order)


# the cost keys the three pass to _whole, on the functions as the elementwise ops carry theirs
# (vector.py): the compiler's form choice reads them (sage/kernels/repeat_cost.py)
WholeReduceSum.cost_key, WholeReduceMax.cost_key, WholeReduceMin.cost_key = "vcadd", "vcmax", "vcmin"


def _block(name, key, op, dst, src, repeatTimes, mask, dstRepStride, srcBlkStride, srcRepStride):
    dt = chk.same_dtype(name, dst, src)
    require(name, dt)
    mask, rep = repeat_form(name, chk.count_arg(mask, f"{name} mask"), repeatTimes, dt.itemsize)
    epb = 32 // dt.itemsize
    si = repeat_index(mask, rep, srcBlkStride, srcRepStride, dt.itemsize)
    lanes = si.shape[1]
    nblk = -(-lanes // epb)
    pad = nblk * epb - lanes
    di = (np.arange(rep)[:, None] * dstRepStride * 8 + np.arange(nblk)[None, :])
    # the destination: 16 B aligned for half, 32 B for float (ReduceDataBlock page)
    issue(name, key, dst, (src,), 0, repeats=rep, spans=((indexed(name, src, si),), (indexed(name, dst, di.ravel()),)),
          dst_align=8 * dt.itemsize)
    rows = src._arr[..., si]
    if pad:
        rows = np.concatenate([rows, np.full(rows.shape[:-1] + (pad,), _identity(op, dt), dtype=dt)], axis=-1)
    dst._arr[..., di] = _tree_rows(rows.reshape(rows.shape[:-1] + (nblk, epb)), op)


@lane_ready
def BlockReduceSum(dst, src, repeatTimes: int, mask: int, dstRepStride: int = 1, srcBlkStride: int = 1,
                   srcRepStride: int = 8) -> None:
    """Sum of each 32 B block: repeat i gives 8 values at dst[i*dstRepStride*8 ...]. Cost: vcgadd."""
    _block("BlockReduceSum", "vcgadd", np.add, dst, src, repeatTimes, mask, dstRepStride, srcBlkStride, srcRepStride)


@lane_ready
def BlockReduceMax(dst, src, repeatTimes: int, mask: int, dstRepStride: int = 1, srcBlkStride: int = 1,
                   srcRepStride: int = 8) -> None:
    """Max of each 32 B block, laid out as BlockReduceSum. Cost: vcmax."""
    _block("BlockReduceMax", "vcmax", np.maximum, dst, src, repeatTimes, mask, dstRepStride, srcBlkStride, srcRepStride)


@lane_ready
def Brcb(dst, src, repeatTimes: int, repeatParams: BrcbRepeatParams | None = None) -> None:
    """Brcb(dst, src, repeatTimes, BrcbRepeatParams(dstBlkStride, dstRepStride)): each of 8 src elements per
    repeat fills one 32 B block of dst. Cost: vbrcb."""
    dt = chk.same_dtype("Brcb", dst, src)
    require("Brcb", dt)
    p = repeatParams or BrcbRepeatParams()
    rep = chk.count_arg(repeatTimes, "Brcb repeatTimes")
    legal.repeat_times("Brcb", rep)
    epb = 32 // dt.itemsize
    blocks = np.arange(rep)[:, None] * p.dstRepStride + np.arange(8)[None, :] * p.dstBlkStride  # (rep, 8)
    di = (blocks[..., None] * epb + np.arange(epb)).reshape(rep, 8, epb)
    si = np.arange(rep * 8)
    issue("Brcb", "vbrcb", dst, (src,), 0, repeats=rep,
          spans=((indexed("Brcb", src, si),), (indexed("Brcb", dst, di.ravel()),)))
    part = src._arr[..., :rep * 8]
    dst._arr[..., di] = part.reshape(part.shape[:-1] + (rep, 8, 1))
