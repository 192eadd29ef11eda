"""Elementwise vector instructions (V pipe): level-2 ``count`` forms and mask/repeat forms.

Arithmetic is done in the operand dtype, as on the hardware: fp16 stays fp16 (numpy
computes each fp16 operation and rounds it), bf16 is computed and rounded per instruction.
"""

from __future__ import annotations

import numpy as np

from sage.npu.isa import legal
from sage.npu.isa.table import allowed_dtypes, allowed_pairs
from sage.npu.ascendc import _checks as chk
from sage.npu.ascendc._vecbase import indexed, issue, repeat_form, repeat_index, require
from sage.npu.ascendc.tensors import LocalTensor
from sage.npu.ascendc.params import BinaryRepeatParams, UnaryRepeatParams
from sage.npu.sim.lanes import as_array, lane_ready
from sage.npu.sim.masks import maskable

_F32 = np.float32


def _rsqrt(x):
    if x.dtype.itemsize == 2:  # one rounding, like the hardware's single instruction
        return (1.0 / np.sqrt(x.astype(_F32))).astype(x.dtype)
    return 1.0 / np.sqrt(x)


def _reciprocal(x):
    return np.reciprocal(x) if x.dtype.itemsize != 2 else (1.0 / x.astype(_F32)).astype(x.dtype)


def _binary(name: str, key: str, fn, what: str):
    allowed = allowed_dtypes(name)

    def op(dst, src0, src1, count_or_mask, repeatTimes=None, repeatParams=None):
        dt = dst._dtype if (dst.__class__ is LocalTensor and src0.__class__ is LocalTensor and src1.__class__ is LocalTensor
                            and src0._dtype is dst._dtype and src1._dtype is dst._dtype) else chk.same_dtype(name, dst, src0, src1)
        if dt not in allowed:
            require(name, dt)
        if repeatTimes is None:
            count = count_or_mask if count_or_mask.__class__ is int else chk.count_arg(count_or_mask, f"{name} count")
            issue(name, key, dst, (src0, src1), count)
            fn(src0._arr[..., :count], src1._arr[..., :count], out=dst._arr[..., :count])
            return
        p = repeatParams or BinaryRepeatParams()
        isz = dt.itemsize
        mk, rep = repeat_form(name, count_or_mask, repeatTimes, isz)
        di = repeat_index(mk, rep, p.dstBlkStride, p.dstRepStride, isz)
        ai = repeat_index(mk, rep, p.src0BlkStride, p.src0RepStride, isz)
        bi = repeat_index(mk, rep, p.src1BlkStride, p.src1RepStride, isz)
        spans = ((indexed(name, src0, ai), indexed(name, src1, bi)), (indexed(name, dst, di),))
        issue(name, key, dst, (src0, src1), 0, repeats=rep, spans=spans)
        if p.dstRepStride == 0 and rep > 1:
            # repeats run in order: with dstRepStride 0 each one reads what the previous wrote
            # (Ascend C's own reductions fold a row into one repeat this way)
            for r in range(rep):
                dst._arr[..., di[r]] = fn(src0._arr[..., ai[r]], src1._arr[..., bi[r]])
            return
        dst._arr[..., di] = fn(src0._arr[..., ai], src1._arr[..., bi])
    op.__name__ = name
    op.__doc__ = f"dst = {what}; also {name}(dst, src0, src1, mask, repeatTimes, BinaryRepeatParams)."
    op.what, op.cost_key = what, key
    return maskable(lane_ready(op))  # (one record, bytes of dst only: may run under a lane mask)


def _unary(name: str, key: str, fn, what: str):
    allowed = allowed_dtypes(name)
    into = isinstance(fn, np.ufunc)  # a ufunc writes dst in place (numpy buffers overlapping operands)

    def op(dst, src, count_or_mask, repeatTimes=None, repeatParams=None):
        dt = dst._dtype if (dst.__class__ is LocalTensor and src.__class__ is LocalTensor
                            and src._dtype is dst._dtype) else chk.same_dtype(name, dst, src)
        if dt not in allowed:
            require(name, dt)
        if repeatTimes is None:
            count = count_or_mask if count_or_mask.__class__ is int else chk.count_arg(count_or_mask, f"{name} count")
            issue(name, key, dst, (src,), count)
            if into:
                fn(src._arr[..., :count], out=dst._arr[..., :count])
            else:
                dst._arr[..., :count] = fn(src._arr[..., :count])
            return
        p = repeatParams or UnaryRepeatParams()
        mk, rep = repeat_form(name, count_or_mask, repeatTimes, dt.itemsize)
        di = repeat_index(mk, rep, p.dstBlkStride, p.dstRepStride, dt.itemsize)
        si = repeat_index(mk, rep, p.srcBlkStride, p.srcRepStride, dt.itemsize)
        issue(name, key, dst, (src,), 0, repeats=rep, spans=((indexed(name, src, si),), (indexed(name, dst, di),)))
        dst._arr[..., di] = fn(src._arr[..., si])
    op.__name__ = name
    op.__doc__ = f"dst = {what}; also {name}(dst, src, mask, repeatTimes, UnaryRepeatParams)."
    op.what, op.cost_key = what, key
    return maskable(lane_ready(op))  # (one record, bytes of dst only: may run under a lane mask)


def _scalar(name: str, key: str, fn, what: str):
    allowed = allowed_dtypes(name)
    into = isinstance(fn, np.ufunc)  # a ufunc writes dst in place (numpy buffers overlapping operands)

    def op(dst, src, scalar, count_or_mask, repeatTimes=None, repeatParams=None):
        dt = dst._dtype if (dst.__class__ is LocalTensor and src.__class__ is LocalTensor
                            and src._dtype is dst._dtype) else chk.same_dtype(name, dst, src)
        if dt not in allowed:
            require(name, dt)
        if repeatTimes is None:
            s = as_array(scalar, dt)  # the scalar operand has the tensor's type, as on the hardware (per lane)
            count = count_or_mask if count_or_mask.__class__ is int else chk.count_arg(count_or_mask, f"{name} count")
            issue(name, key, dst, (src,), count)
            if into:
                fn(src._arr[..., :count], s, out=dst._arr[..., :count])
            else:
                dst._arr[..., :count] = fn(src._arr[..., :count], s)
            return
        s = as_array(scalar, dt, 3)  # (each lane's operand is (repeats, elements) here)
        p = repeatParams or UnaryRepeatParams()
        mk, rep = repeat_form(name, count_or_mask, repeatTimes, dt.itemsize)
        di = repeat_index(mk, rep, p.dstBlkStride, p.dstRepStride, dt.itemsize)
        si = repeat_index(mk, rep, p.srcBlkStride, p.srcRepStride, dt.itemsize)
        issue(name, key, dst, (src,), 0, repeats=rep, spans=((indexed(name, src, si),), (indexed(name, dst, di),)))
        dst._arr[..., di] = fn(src._arr[..., si], s)
    op.__name__ = name
    op.__doc__ = f"dst = {what} (scalar rounded to the dtype); also {name}(dst, src, scalar, mask, repeatTimes, UnaryRepeatParams)."
    op.what, op.cost_key = what, key
    return maskable(lane_ready(op))  # (one record, bytes of dst only: may run under a lane mask)


Add = _binary("Add", "vadd", np.add, "src0 + src1")
Sub = _binary("Sub", "vsub", np.subtract, "src0 - src1")
Mul = _binary("Mul", "vmul", np.multiply, "src0 * src1")
Div = _binary("Div", "vdiv", np.divide, "src0 / src1 (floats)")
Max = _binary("Max", "vmax", np.maximum, "max(src0, src1)")
Min = _binary("Min", "vmin", np.minimum, "min(src0, src1)")
And = _binary("And", "vand", np.bitwise_and, "src0 & src1 (integers)")
Or = _binary("Or", "vor", np.bitwise_or, "src0 | src1 (integers)")

Exp = _unary("Exp", "vexp", np.exp, "exp(src)")
Ln = _unary("Ln", "vln", np.log, "ln(src)")
Abs = _unary("Abs", "vabs", np.abs, "|src|")
Reciprocal = _unary("Reciprocal", "vrec", _reciprocal, "1 / src")
Sqrt = _unary("Sqrt", "vsqrt", np.sqrt, "sqrt(src)")
Rsqrt = _unary("Rsqrt", "vrsqrt", _rsqrt, "1 / sqrt(src)")
Relu = _unary("Relu", "vrelu", lambda x: np.maximum(x, x.dtype.type(0)), "max(src, 0)")
Not = _unary("Not", "vnot", np.invert, "~src (integers)")

Adds = _scalar("Adds", "vadds", np.add, "src + scalar")
Muls = _scalar("Muls", "vmuls", np.multiply, "src * scalar")
Maxs = _scalar("Maxs", "vmaxs", np.maximum, "max(src, scalar)")
Mins = _scalar("Mins", "vmins", np.minimum, "min(src, scalar)")
LeakyRelu = _scalar("LeakyRelu", "vmuls", lambda x, a: np.where(x >= 0, x, x * a), "src if src >= 0 else src * scalar")


@maskable
@lane_ready
def Duplicate(dst, scalar, count_or_mask, repeatTimes=None, dstBlockStride=1, dstRepeatStride=8) -> None:
    """Duplicate(dst, scalar, count): dst[:count] = scalar. Cost: vector_dup."""
    dst = chk.local(dst, "Duplicate dst", "UB")
    dt = dst._dtype
    require("Duplicate", dt)
    if repeatTimes is None:
        count = chk.count_arg(count_or_mask, "Duplicate count")
        issue("Duplicate", "vector_dup", dst, (), count)
        dst._arr[..., :count] = as_array(scalar, dt)
        return
    mk, rep = repeat_form("Duplicate", count_or_mask, repeatTimes, dt.itemsize)
    di = repeat_index(mk, rep, dstBlockStride, dstRepeatStride, dt.itemsize)
    issue("Duplicate", "vector_dup", dst, (), 0, repeats=rep, spans=((), (indexed("Duplicate", dst, di),)))
    dst._arr[..., di] = as_array(scalar, dt, 3)


@lane_ready
def Axpy(dst, src, scalar, count: int) -> None:
    """Axpy(dst, src, scalar, count): dst = dst + src * scalar (src fp16 with dst fp32 allowed). Cost: vaxpy."""
    if not (dst.__class__ is LocalTensor and src.__class__ is LocalTensor and dst._slot.alloc_gen == dst._gen
            and src._slot.alloc_gen == src._gen and dst._slot.space.name == "UB" and src._slot.space.name == "UB"):
        dst, src = chk.local(dst, "Axpy dst", "UB"), chk.local(src, "Axpy src", "UB")
    if (src._dtype, dst._dtype) not in _AXPY_TYPES:
        legal.combo("Axpy", src._dtype, dst._dtype)
    if count.__class__ is not int:
        count = chk.count_arg(count, "Axpy count")
    # Mixed half -> float Axpy processes 64 lanes per repeat (Ascend C's PAR for that mode), so
    # repeats follow the fp32 destination; the product is formed at the destination precision.
    issue("Axpy", "vaxpy", dst, (src,), count, itemsize=dst._dtype.itemsize)
    dt = dst._dtype
    # src widened exactly to dst's type inside the multiply, then dst += the product, element by element
    prod = np.multiply(src._arr[..., :count], as_array(scalar, dt), dtype=dt)
    d = dst._arr[..., :count]
    np.add(d, prod, out=d)


_AXPY_TYPES = allowed_pairs("Axpy")
