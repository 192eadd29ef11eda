"""LayerNorm over the last axis of [B, S, H] with mean and variance outputs, as Ascend C's Atlas A2
implementation issues it (asc-devkit impl/adv_api/detail/normalization/layernorm/
layernorm_common_impl.h and layernorm_common_basic_impl.h; the tiling of
impl/adv_api/tiling/normalization/layernorm_tiling_impl.cpp).

Per round of rows (as many as a third of the temporary buffer holds): mean = row sum of x/H;
variance = row sum of (x - mean)^2 / H; y = (x - mean) / sqrt(variance + eps) * gamma + beta.
Row sums fold the 64-column blocks of a row into the first (Add with repeats in order), then
WholeReduceSum. Everything is float; half input is cast in and the results cast out (CAST_NONE).
"""

from __future__ import annotations

import numpy as np

from sage.npu import dtypes
from sage.npu.errors import KernelRuntimeError
from sage.npu.ascendc import _checks as chk
from sage.npu.ascendc import _hlbase as hl
from sage.npu.ascendc import vector as v
from sage.npu.ascendc._hlbase import barrier
from sage.npu.ascendc._vecbase import issue, repeat_bytes
from sage.npu.ascendc.cast import Cast, RoundMode
from sage.npu.ascendc.params import BinaryRepeatParams as BRP
from sage.npu.ascendc.params_highlevel import LayerNormShapeInfo
from sage.npu.ascendc.reduce import WholeReduceSum
from sage.npu.ascendc.tensors import LocalTensor

LANES = 64
MAX_REPEAT = 255


def _ceil32(nbytes: int) -> int:
    return -(-nbytes // 32) * 32


def min_tmp_bytes(b: int, s: int, h: int) -> int:
    """GetLayerNormMinTmpSize: three float rows of H and two float [B*S] mean/variance buffers."""
    return 3 * _ceil32(h * 4) + 2 * _ceil32(b * s * 4)


def _row_sums(compact, at_rows, src, rows: int, h: int) -> None:
    """compact[i] and at_rows[i*h] = sum of row i of src[rows, h]; src's rows are folded in place
    (LayerNormReduceSumImpl)."""
    folds, tail = divmod(h, LANES)
    if h > LANES:
        for i in range(rows):
            row = src[i * h]
            if folds > 1:
                v.Add(row, src[i * h + LANES], row, LANES, folds - 1, BRP(1, 1, 1, 0, 8, 0))
                barrier()
            if tail:
                v.Add(row, src[i * h + folds * LANES], row, tail, 1, BRP(1, 1, 1, 0, 8, 0))
                barrier()
    width = min(h, LANES)
    for r0 in range(0, rows, MAX_REPEAT):
        r = min(MAX_REPEAT, rows - r0)
        WholeReduceSum(compact[r0], src[r0 * h], width, r, 1, 1, h // 8)
        WholeReduceSum(at_rows[r0 * h], src[r0 * h], width, r, h, 1, h // 8)
        barrier()


def _select_fill(dst, value, mask, value_span, n: int) -> None:
    """Select with an all-zero mask against the CMPMASK register: dst[:n] = the scalar SetCmpMask loaded."""
    reads = (mask.span(-(-n // 8)), value_span)
    issue("Select", "vsel", dst, (mask,), 0, itemsize=dst._dtype.itemsize,
          repeats=-(-n * dst._dtype.itemsize // repeat_bytes("Select")), spans=(reads, (dst.span(n),)))
    dst._arr[:n] = value


def _broadcast_rows(dst, vals, rows: int, h: int) -> None:
    """dst[i, :] = vals[i*h] (BroadcastLastDim: SetCmpMask loads the value, vals' first bytes are zeroed
    by an int16 Muls to serve as the mask, one Select per row)."""
    first = vals._arr[0]  # SetCmpMask(vals) runs before the Muls below zeroes it
    zeros = vals.ReinterpretCast(dtypes.int16)
    barrier()
    v.Muls(zeros, zeros, 0, h)
    barrier()
    mask = zeros.ReinterpretCast(dtypes.uint8)
    for i in range(rows):
        value = first if i == 0 else vals._arr[i * h]
        off = vals._off + i * h * 4
        _select_fill(dst[i * h], value, mask, (vals._slot, off, off + 4), h)
        barrier()


def _round(x, gamma, beta, out, mean, var, a, b, c, rows: int, h: int, inv_h: float, eps: float, dt) -> None:
    """One round of `rows` rows: LayerNormExe (x, gamma, beta, out in the operand dtype; mean, var float)."""
    n = rows * h
    if dt == dtypes.float16:
        Cast(a, x, RoundMode.CAST_NONE, n)
        barrier()
        x = a
    v.Muls(c, x, inv_h, n)                     # GetLayerNormOutputMean
    barrier()
    _row_sums(mean, b, c, rows, h)
    _broadcast_rows(c, b, rows, h)             # GetLayerNormOutputVariance
    v.Sub(b, x, c, n)
    barrier()
    v.Mul(c, b, b, n)
    barrier()
    v.Muls(a, c, inv_h, n)
    barrier()
    _row_sums(var, c, a, rows, h)
    barrier()
    _broadcast_rows(a, c, rows, h)             # GetLayerNormOutputPre
    v.Adds(c, a, eps, n)
    barrier()
    v.Sqrt(a, c, n)
    barrier()
    v.Duplicate(c, 1.0, 8)
    barrier()
    full, rest = divmod(n, LANES)
    for r0 in range(0, full, MAX_REPEAT):      # 1 / sqrt: the ones block read with stride 0
        v.Div(a[r0 * LANES], c, a[r0 * LANES], LANES, min(MAX_REPEAT, full - r0), BRP(1, 0, 1, 8, 0, 8))
    if rest:
        v.Div(a[full * LANES], c, a[full * LANES], rest, 1, BRP(1, 0, 1, 8, 0, 8))
    barrier()
    v.Mul(c, a, b, n)
    barrier()
    if dt == dtypes.float16:                   # GetLayerNormOutput<half>
        Cast(a, gamma, RoundMode.CAST_NONE, h)
        barrier()
        _per_row(v.Mul, b, c, a, rows, h)
        Cast(c, beta, RoundMode.CAST_NONE, h)
        barrier()
        _per_row(v.Add, a, b, c, rows, h)
        Cast(out, a, RoundMode.CAST_NONE, n)
        barrier()
    else:
        _per_row(v.Mul, a, c, gamma, rows, h)
        _per_row(v.Add, out, a, beta, rows, h)


def _per_row(op, dst, src, row, rows: int, h: int) -> None:
    """DuplicateMulImpl / DuplicateAddImpl: each row with the same [H] tensor, one barrier after."""
    for i in range(rows):
        op(dst[i * h], src[i * h], row, h)
    barrier()


def LayerNorm(output, outputMean, outputVariance, inputX, gamma, beta, sharedTmpBuffer, epsilon=None,
              layerNormShapeInfo=None) -> None:
    """Over H of inputX [B, S, H], in float: outputMean/outputVariance [B*S] get mean and biased variance,
    output = (x - mean)/sqrt(var + epsilon)*gamma + beta. Temp >= (3H + 2BS)*4 B; rounds of temp/(12H) rows."""
    if not isinstance(sharedTmpBuffer, LocalTensor):
        sharedTmpBuffer, epsilon, layerNormShapeInfo = None, sharedTmpBuffer, epsilon
    info = layerNormShapeInfo
    if not isinstance(info, LayerNormShapeInfo):
        raise KernelRuntimeError("LayerNorm needs a LayerNormShapeInfo(bLength, sLength, hLength, originalHLength) "
                                 "as its last argument")
    b, s, h = (chk.count_arg(getattr(info, f), f) for f in ("bLength", "sLength", "hLength"))
    ori_h = info.originalHLength or h
    dt, n_all = hl.operands("LayerNorm", output, inputX, b * s * h)
    for t in (gamma, beta):
        chk.same_dtype("LayerNorm gamma/beta", chk.local(t, "LayerNorm gamma/beta", "UB"), inputX)
        chk.fits(t, h, "LayerNorm gamma/beta")
    for t in (outputMean, outputVariance):
        chk.same_dtype("LayerNorm mean/variance", chk.local(t, "LayerNorm mean/variance", "UB"), inputX)
        chk.fits(t, b * s, "LayerNorm mean/variance")
    if (h * dt.itemsize) % 32 or not 0 < ori_h <= h:
        raise KernelRuntimeError(f"LayerNorm: hLength x sizeof must be 32 B aligned and 0 < originalHLength <= "
                                 f"hLength (got H={h}, oriH={ori_h})")
    work = hl.temp_buffer("LayerNorm", sharedTmpBuffer, min_tmp_bytes(b, s, h), output, inputX).ReinterpretCast(
        dtypes.float32)
    rows_all = b * s
    mv = -(-rows_all // 8) * 8 if dt == dtypes.float16 else 0  # the float mean/variance of half input
    one = min((work._size - 2 * mv) // 3 // h * h, n_all)
    if one == 0:
        raise KernelRuntimeError(f"LayerNorm: the temporary buffer cannot hold one row of {h} floats three times")
    a, bb, c = work[2 * mv], work[2 * mv + one], work[2 * mv + 2 * one]
    mean, var = (work, work[mv]) if mv else (outputMean, outputVariance)
    # host-side 1.0f / oriH; epsilon has the operand type (a half epsilon is rounded to half first)
    inv_h, eps = float(np.float32(1.0) / np.float32(ori_h)), float(dt.type(epsilon))
    rows = one // h
    for r0, rr in hl.chunks(rows_all, rows):
        _round(inputX[r0 * h], gamma, beta, output[r0 * h], mean[r0], var[r0], a, bb, c, rr, h, inv_h, eps, dt)
    if mv:  # GetOutputMeanVariance
        Cast(outputMean, mean, RoundMode.CAST_NONE, rows_all)
        barrier()
        Cast(outputVariance, var, RoundMode.CAST_NONE, rows_all)
        barrier()
