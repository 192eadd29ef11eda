"""Compare, CompareScalar and Select: bit masks (one bit per element, uint8 tensors)."""

from __future__ import annotations

import enum

import numpy as np

from sage.npu import dtypes
from sage.npu.errors import AlignmentError, BoundsError, KernelRuntimeError
from sage.npu.isa import legal
from sage.npu.ascendc import _checks as chk
from sage.npu.ascendc._vecbase import issue, repeat_bytes, require
from sage.npu.ascendc.tensors import LocalTensor
from sage.npu.sim.lanes import as_array, lane_ready


class CMPMODE(enum.Enum):
    LT = "lt"
    GT = "gt"
    EQ = "eq"
    LE = "le"
    GE = "ge"
    NE = "ne"


class SELMODE(enum.Enum):
    VSEL_CMPMASK_SPR = 0
    VSEL_TENSOR_SCALAR_MODE = 1
    VSEL_TENSOR_TENSOR_MODE = 2


_OPS = {CMPMODE.LT: np.less, CMPMODE.GT: np.greater, CMPMODE.EQ: np.equal,
        CMPMODE.LE: np.less_equal, CMPMODE.GE: np.greater_equal, CMPMODE.NE: np.not_equal}


def _mask_out(name, dst, src0, count: int, mode: CMPMODE):
    require(name, src0._dtype)
    legal.compare_mode(name, src0._dtype, mode.name)
    isz = src0._dtype.itemsize
    rb = repeat_bytes(name)
    if (count * isz) % rb:
        raise AlignmentError(f"{name}: count x sizeof = {count * isz} B must be a multiple of {rb} B "
                             f"({rb // isz} elements); pad the tile")
    nbytes = count // 8
    chk.local(dst, name, "UB")
    if dst._size * dst._dtype.itemsize < nbytes:
        raise BoundsError(f"{name}: the mask needs {nbytes} B (one bit per element), dst holds {dst._size * dst._dtype.itemsize} B")
    return nbytes


@lane_ready
def Compare(dst, src0, src1, cmpMode: CMPMODE, count: int) -> None:
    """Compare(dst_mask, src0, src1, CMPMODE.LT, count): bit i (LSB first) of the uint8 mask dst = src0[i] <op>
    src1[i]; count x sizeof must be a multiple of 256 B; dst needs count/8 bytes. Cost: vcmp."""
    chk.same_dtype("Compare", src0, src1)
    count = chk.count_arg(count, "Compare count")
    nbytes = _mask_out("Compare", dst, src0, count, cmpMode)
    spans = ((src0.span(count), src1.span(count)), ((dst._slot, dst._off, dst._off + nbytes),))
    for t in (src0, src1):
        chk.fits(t, count, "Compare")
    issue("Compare", "vcmp", dst, (src0, src1), 0, itemsize=src0._dtype.itemsize,
          repeats=count * src0._dtype.itemsize // repeat_bytes("Compare"), spans=spans)
    # (along the last axis: a lane group's rows are packed each on its own)
    bits = _OPS[cmpMode](src0._arr[..., :count], src1._arr[..., :count])
    dst._arr.view(np.uint8)[..., :nbytes] = np.packbits(bits, axis=-1, bitorder="little")


@lane_ready
def CompareScalar(dst, src0, scalar, cmpMode: CMPMODE, count: int) -> None:
    """CompareScalar(dst_mask, src0, scalar, CMPMODE.X, count): bit i = src0[i] <op> scalar, as Compare. Cost: vcmps."""
    count = chk.count_arg(count, "CompareScalar count")
    chk.local(src0, "CompareScalar src", "UB")
    nbytes = _mask_out("CompareScalar", dst, src0, count, cmpMode)
    chk.fits(src0, count, "CompareScalar")
    spans = ((src0.span(count),), ((dst._slot, dst._off, dst._off + nbytes),))
    issue("CompareScalar", "vcmps", dst, (src0,), 0, itemsize=src0._dtype.itemsize,
          repeats=count * src0._dtype.itemsize // repeat_bytes("CompareScalar"), spans=spans)
    bits = _OPS[cmpMode](src0._arr[..., :count], as_array(scalar, src0._dtype))
    dst._arr.view(np.uint8)[..., :nbytes] = np.packbits(bits, axis=-1, bitorder="little")


@lane_ready
def Select(dst, selMask, src0, src1, selMode: SELMODE, count: int) -> None:
    """Select(dst, mask, src0, src1, SELMODE.X, count): dst[i] = src0[i] if mask bit i else src1[i]; src1 is a
    scalar with VSEL_TENSOR_SCALAR_MODE, a tensor with VSEL_TENSOR_TENSOR_MODE. Cost: vsel."""
    count = chk.count_arg(count, "Select count")
    scalar_mode = not isinstance(src1, LocalTensor)
    if selMode == SELMODE.VSEL_CMPMASK_SPR:
        raise KernelRuntimeError("Select: VSEL_CMPMASK_SPR (mask in a register) is not simulated; pass the mask tensor "
                                 "with VSEL_TENSOR_TENSOR_MODE or VSEL_TENSOR_SCALAR_MODE")
    if scalar_mode != (selMode == SELMODE.VSEL_TENSOR_SCALAR_MODE):
        raise KernelRuntimeError("Select: VSEL_TENSOR_SCALAR_MODE takes a scalar src1, VSEL_TENSOR_TENSOR_MODE a tensor")
    srcs = (src0,) if scalar_mode else (src0, src1)
    dt = chk.same_dtype("Select", dst, *srcs)
    require("Select", dt)
    nbytes = -(-count // 8)
    chk.local(selMask, "Select mask", "UB")
    if selMask._size * selMask._dtype.itemsize < nbytes:
        raise BoundsError(f"Select: the mask needs {nbytes} B for {count} elements")
    for t in (dst, *srcs):
        chk.fits(t, count, "Select")
    spans = (tuple(t.span(count) for t in srcs) + ((selMask._slot, selMask._off, selMask._off + nbytes),),
             (dst.span(count),))
    issue("Select", "vsel", dst, (*srcs, selMask), 0, itemsize=dt.itemsize,
          repeats=-(-count * dt.itemsize // repeat_bytes("Select")), spans=spans)
    bits = np.unpackbits(selMask._arr.view(np.uint8)[..., :nbytes], axis=-1, bitorder="little")[..., :count].astype(bool)
    other = as_array(src1, dt) if scalar_mode else src1._arr[..., :count]
    dst._arr[..., :count] = np.where(bits, src0._arr[..., :count], other)


@lane_ready
def Gather(dst, src, srcOffset, srcBaseAddr: int, count: int) -> None:
    """Gather(dst, src, offsets_uint32, base_bytes, count): dst[i] = element at byte base + offsets[i] of src. Cost: vgather."""
    count = chk.count_arg(count, "Gather count")
    if srcOffset._dtype not in (dtypes.uint32, dtypes.int32):
        raise KernelRuntimeError(f"Gather: offsets must be uint32 byte offsets, got {srcOffset._dtype.name}")
    dt = chk.same_dtype("Gather", dst, src)
    require("Gather", dt)
    chk.fits(srcOffset, count, "Gather offsets")
    chk.fits(dst, count, "Gather")
    spans = ((src.span(src._size), srcOffset.span(count)), (dst.span(count),))
    issue("Gather", "vgather", dst, (src, srcOffset), 0, itemsize=dt.itemsize,
          repeats=-(-count * dt.itemsize // repeat_bytes("Gather")), spans=spans)
    byte_off = srcOffset._arr[..., :count].astype(np.int64) + int(srcBaseAddr)
    if count and ((byte_off % dt.itemsize).any() or byte_off.min() < 0 or byte_off.max() >= src._size * dt.itemsize):
        raise BoundsError(f"Gather: byte offsets must be multiples of {dt.itemsize} inside the source of "
                          f"{src._size * dt.itemsize} B")
    dst._arr[..., :count] = np.take_along_axis(src._arr, byte_off // dt.itemsize, axis=-1)  # (each lane its own)
