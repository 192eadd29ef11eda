"""Math high-level APIs (Tanh, Erf, Log, Log2, Log10, Sign) as Ascend C's Atlas A2 implementation
issues them (asc-devkit impl/adv_api/detail/math/*, cited per API in sage/npu/isa/atlas_a2.toml):
half inputs are computed in float where the implementation casts, with its Cast modes.
"""

from __future__ import annotations

from sage.npu import dtypes
from sage.npu.errors import KernelRuntimeError
from sage.npu.ascendc import _hlbase as hl
from sage.npu.ascendc import vector as v
from sage.npu.ascendc._hlbase import barrier, steps
from sage.npu.ascendc._vecbase import repeat_bytes
from sage.npu.ascendc.cast import Cast, RoundMode
from sage.npu.ascendc.compare import CMPMODE, SELMODE, Compare, Select
from sage.npu.ascendc.tensors import LocalTensor

TANH_MIN_TMP = {2: 4 * 256, 4: 256}   # GetTanhMinTmpSize: half 4, float 1 repeat(s) of 256 B
ERF_MIN_TMP = {2: 8 * 256, 4: 3 * 256}  # GetErfMinTmpSize
LOG2_MIN_TMP = 256                      # GetLog2MinTmpSize (half only; float needs none)
SIGN_MIN_TMP = 3 * 256                  # GetSignMinTmpSize
ERF_P = (0.053443748819, 0.75517016694e1, 0.10162808918e3, 0.13938061484e4, 0.50637915060e4, 0.29639384698e5)
ERF_Q = (0.31212858877e2, 0.39856963806e3, 0.30231248150e4, 0.13243365831e5, 0.26267224157e5)


def _in_float(dst, src, work_f32, n: int, body, out_mode: RoundMode = RoundMode.CAST_NONE) -> None:
    """half: Cast to float, compute, Cast back (the implementations' conversion tensor)."""
    Cast(work_f32, src, RoundMode.CAST_NONE, n)
    barrier()
    body(work_f32, work_f32, n)
    Cast(dst, work_f32, out_mode, n)
    barrier()


def _tanh_float(clip):
    def body(dst, src, n):
        # (e^2x - 1) / (e^2x + 1) on x clipped to [-8.8, 8.8] (tanh_common_impl.h TanhFormulaImpl)
        steps(n, (v.Mins, clip, src, 8.8), (v.Maxs, clip, clip, -8.8), (v.Muls, clip, clip, 2.0), (v.Exp, clip, clip),
              (v.Adds, dst, clip, -1.0), (v.Adds, clip, clip, 1.0), (v.Div, dst, dst, clip))
    return body


def Tanh(dst, src, sharedTmpBuffer, calCount=None) -> None:
    """(e^2x - 1)/(e^2x + 1), x clipped to +-8.8, in float (half: cast in and out); inexact relatively near 0.
    Temp >= 256 B (half 1024); 7 instrs per temp/4 (half temp/8)."""
    tmp, count = hl.tmp_and_count(sharedTmpBuffer, calCount)
    dt, count = hl.operands("Tanh", dst, src, count)
    work = hl.temp_buffer("Tanh", tmp, TANH_MIN_TMP[dt.itemsize], dst, src)
    if dt == dtypes.float16:
        stack, (conv, clip) = hl.split(work, dtypes.float32, 2)
        for off, n in hl.chunks(count, stack):
            _in_float(dst[off], src[off], conv, n, _tanh_float(clip))
        return
    stack, (clip,) = hl.split(work, dtypes.float32, 1)
    for off, n in hl.chunks(count, stack):
        _tanh_float(clip)(dst[off], src[off], n)


def _erf_float(t1, t2, t3):
    def body(dst, src, n):
        # x = clip(x, +-3.92); erf = P(x) / Q(x) (erf_common_impl.h ErfClip/ErfComputeP/ErfComputeQ)
        steps(n, (v.Mins, t1, src, 3.92), (v.Maxs, dst, t1, -3.92))
        x = dst
        steps(n, (v.Mul, t1, x, x), (v.Muls, t2, t1, ERF_P[0]), (v.Adds, t3, t2, ERF_P[1]))
        for p in ERF_P[2:]:
            steps(n, (v.Mul, t2, t1, t3), (v.Adds, t3, t2, p))
        steps(n, (v.Mul, t2, x, t3), (v.Adds, t3, t1, ERF_Q[0]))
        for q in ERF_Q[1:]:  # the implementation reuses x's tensor for the Q products
            steps(n, (v.Mul, x, t1, t3), (v.Adds, t3, x, q))
        steps(n, (v.Div, dst, t2, t3))
    return body


def Erf(dst, src, sharedTmpBuffer, calCount=None) -> None:
    """Rational P(x)/Q(x) (degree 11/10) on x clipped to +-3.92, in float, |error| < 3e-7. Temp >= 768 B (half
    2048); 24 instrs per temp/12 (half temp/16)."""
    tmp, count = hl.tmp_and_count(sharedTmpBuffer, calCount)
    dt, count = hl.operands("Erf", dst, src, count)
    work = hl.temp_buffer("Erf", tmp, ERF_MIN_TMP[dt.itemsize], dst, src)
    if dt == dtypes.float16:
        stack, (t1, t2, t3, t4) = hl.split(work, dtypes.float32, 4)
        for off, n in hl.chunks(count, stack):
            Cast(t4, src[off], RoundMode.CAST_NONE, n)
            barrier()
            _erf_float(t1, t2, t3)(t4, t4, n)  # the implementation divides into t1: same cost and values
            Cast(dst[off], t4, RoundMode.CAST_ROUND, n)  # erf_common_impl.h GetErfCastType on 2201
            barrier()
        return
    stack, (t1, t2, t3) = hl.split(work, dtypes.float32, 3)
    for off, n in hl.chunks(count, stack):
        _erf_float(t1, t2, t3)(dst[off], src[off], n)


def Log(dst, src, calCount) -> None:
    """ln(x): one Ln."""
    _, count = hl.operands("Log", dst, src, calCount)
    v.Ln(dst, src, count)


def Log10(dst, src, calCount) -> None:
    """Ln then Muls by 1/ln 10."""
    dt, count = hl.operands("Log10", dst, src, calCount)
    v.Ln(dst, src, count)
    barrier()
    v.Muls(dst, dst, 0.43429448190325176, count)


def Log2(dst, src, sharedTmpBuffer=None, calCount=None) -> None:
    """Ln then Muls by 1/ln 2; float: Log2(dst, src, count); half is computed in float (temp >= 256 B)."""
    if calCount is None and not isinstance(sharedTmpBuffer, LocalTensor):
        sharedTmpBuffer, calCount = None, sharedTmpBuffer
    dt, count = hl.operands("Log2", dst, src, calCount)
    if dt == dtypes.float32:
        v.Ln(dst, src, count)
        barrier()
        v.Muls(dst, dst, 1.4426950408889634, count)
        return
    work = hl.temp_buffer("Log2", sharedTmpBuffer, LOG2_MIN_TMP, dst, src)
    split, (f,) = hl.split(work, dtypes.float32, 1)
    for off, n in hl.chunks(count, split):
        _in_float(dst[off], src[off], f, n, lambda d, s, k: steps(k, (v.Ln, d, s), (v.Muls, d, d, 1.4426950408889634)))


def Sign(dst, src, sharedTmpBuffer, calCount=None) -> None:
    """-1/0/1 by two Compares and two Selects; the Compares read whole 256 B repeats (size src/dst to them).
    Temp >= 768 B; 8 instrs per temp/(3 sizeof)."""
    tmp, count = hl.tmp_and_count(sharedTmpBuffer, calCount)
    dt, count = hl.operands("Sign", dst, src, count)
    work = hl.temp_buffer("Sign", tmp, SIGN_MIN_TMP, dst, src)
    split = work._size // dt.itemsize // 3 // hl.BLOCK_ELEMS * hl.BLOCK_ELEMS
    mask_bytes = -(-split // 8 // 32) * 32
    m_lt, m_gt = work, work[mask_bytes]
    ones = work[2 * mask_bytes].ReinterpretCast(dt)
    t4 = ones[split]
    lanes = repeat_bytes("Sign") // dt.itemsize
    for off, n in hl.chunks(count, split):
        d, s = dst[off], src[off]
        whole = -(-n // lanes) * lanes
        if whole > min(d._size, s._size):
            raise KernelRuntimeError(f"Sign: its Compares read {whole} elements (whole 256 B repeats) from offset "
                                     f"{off}; size src and dst to a multiple of {lanes} elements")
        steps(n, (v.Duplicate, d, 0.0))
        Compare(m_lt, s, d, CMPMODE.LT, whole)
        Compare(m_gt, s, d, CMPMODE.GT, whole)
        # the implementations' SetCmpMask(1.0) / SetCmpMask(-1.0) are the scalar operands of the Selects
        steps(n, (v.Duplicate, ones, 1.0), (Select, t4, m_lt, d, 1.0, SELMODE.VSEL_TENSOR_SCALAR_MODE),
              (v.Duplicate, ones, -1.0), (Select, d, m_gt, d, -1.0, SELMODE.VSEL_TENSOR_SCALAR_MODE), (v.Add, d, t4, d))
