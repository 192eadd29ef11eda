"""SoftMax (row-wise over the last axis, ND) as Ascend C's Atlas A2 implementation issues it
(asc-devkit impl/adv_api/detail/activation/softmax: membase/v220/softmax_impl.h,
membase/common/softmax_impl/softmax_generic_nd_impl.h, v220 softmax_common_nd_reduce.h and
softmax_common_broadcast.h, softmax_common/softmax_common_arithmetic.h and _tiling_func.h).

Per chunk of rows (as many as the temporary buffer holds): row max -> broadcast to a 32 B block
per row (the maxTensor output) -> x - max -> exp -> row sum -> broadcast (sumTensor) -> divide.
Reductions run in float: a row folds its 64-column blocks into one with Max/Add, then two
BlockReduce steps; half inputs are cast to float first and the results back with CAST_ROUND.
"""

from __future__ import annotations

from dataclasses import dataclass

from sage.npu import dtypes
from sage.npu.errors import KernelRuntimeError
from sage.npu.ascendc import _checks as chk
from sage.npu.ascendc import _hlbase as hl
from sage.npu.ascendc import reduce as rd
from sage.npu.ascendc import vector as v
from sage.npu.ascendc._hlbase import barrier
from sage.npu.ascendc.cast import Cast, RoundMode
from sage.npu.ascendc.datamove import DataCopy
from sage.npu.ascendc.params import BinaryRepeatParams as BRP
from sage.npu.ascendc.params import BrcbRepeatParams
from sage.npu.ascendc.params_highlevel import SoftMaxShapeInfo
from sage.npu.ascendc.tensors import LocalTensor

LANES = 64          # the implementation's FLOAT_REPEAT_SIZE: its column blocks, fixed by its code
MAX_REPEAT = 255
BASIC_TILE = 8      # SOFTMAX_BASIC_TILE_NUM
SUB_DIV_ROW = 192   # SOFTMAX_SUB_DIV_ROW_COLUMN_SIZE: below it, broadcast ops go per column block
OUT_ROUND = RoundMode.CAST_ROUND  # FLOAT2HALF_ROUND_MODE of membase/v220


@dataclass(frozen=True)
class _Reduce:
    binary: object
    whole: object
    block: object
    order: tuple = ()


_MAX = _Reduce(v.Max, rd.WholeReduceMax, rd.BlockReduceMax, (rd.ReduceOrder.ORDER_ONLY_VALUE,))
_SUM = _Reduce(v.Add, rd.WholeReduceSum, rd.BlockReduceSum)


def _runs(rows: int):
    """(first row, rows) in runs of at most 255 repeats."""
    for r0 in range(0, rows, MAX_REPEAT):
        yield r0, min(MAX_REPEAT, rows - r0)


def _fold(kind: _Reduce, tmp, src, m: int, ori_k: int, k: int) -> None:
    """tmp[m, 64] = each row's 64-column blocks combined (NewReduce*LastNDImpl, before BasicBlock*)."""
    split, tail = divmod(ori_k, LANES)
    rs = k // 8
    op = kind.binary
    if ori_k >= 8 * LANES:  # BigBlockReduce*: 8 BlockReduce repeats give 64 partials, then the rest folds in
        for i in range(m):
            kind.block(tmp[LANES * i], src[i * k], 8, LANES, 1, 1, 8)
        if split > 8:
            barrier()
            for j in range(m):
                op(tmp[LANES * j], src[8 * LANES + j * k], tmp[LANES * j], LANES, split - 8, BRP(1, 1, 1, 0, 8, 0))
    elif ori_k >= 2 * LANES:
        for r0, r in _runs(m):
            op(tmp[LANES * r0], src[r0 * k], src[r0 * k + LANES], LANES, r, BRP(1, 1, 1, 8, rs, rs))
        if m > split:
            for i in range(2, split):
                barrier()
                for r0, r in _runs(m):
                    op(tmp[LANES * r0], tmp[LANES * r0], src[r0 * k + LANES * i], LANES, r, BRP(1, 1, 1, 8, 8, rs))
        elif split > 2:
            barrier()
            for j in range(m):
                op(tmp[LANES * j], src[2 * LANES + j * k], tmp[LANES * j], LANES, split - 2, BRP(1, 1, 1, 0, 8, 0))
    else:  # FirstBlockCopyImpl
        for i in range(m):
            DataCopy(tmp[LANES * i], src[i * k], LANES)
    if tail:
        barrier()
        if k > MAX_REPEAT * 8:
            for i in range(m):
                op(tmp[LANES * i], tmp[LANES * i], src[LANES * split + i * k], tail, 1, BRP(1, 1, 1, 8, 8, 8))
        else:
            for r0, r in _runs(m):
                op(tmp[LANES * r0], tmp[LANES * r0], src[LANES * split + r0 * k], tail, r, BRP(1, 1, 1, 8, 8, rs))


def _block_reduce(kind: _Reduce, dst, src, values: int) -> None:
    """Counter-mode BlockReduce over `values` floats (one result per 8): full repeats, then the rest."""
    full, rest = divmod(values, LANES)
    for r0, r in _runs(full):
        kind.block(dst[8 * r0], src[LANES * r0], r, LANES, 1, 1, 8)
    if rest:
        kind.block(dst[8 * full], src[LANES * full], 1, rest, 1, 1, 8)


def _reduce_rows(kind: _Reduce, dst, src, tmp, m: int, ori_k: int, k: int, dst_k: int) -> None:
    """dst[m, dst_k] = each row's max or sum repeated over a 32 B block (dst_k floats: 8, or 16 when the
    result is then cast to half)."""
    if ori_k < LANES:
        for r0, r in _runs(m):
            kind.whole(dst[r0], src[r0 * k], ori_k, r, 1, 1, k // 8, *kind.order)
    else:
        _fold(kind, tmp, src, m, ori_k, k)
        barrier()
        if m == 1:  # 8 repeats over the same 64 partials write the value 8 times: the block, broadcast
            kind.whole(dst, tmp, LANES, 8, 1, 1, 0, *kind.order)
            if dst_k == 16:
                barrier()
                DataCopy(dst[8], dst, 8)
        else:
            _block_reduce(kind, tmp, tmp, m * LANES)
            barrier()
            _block_reduce(kind, dst, tmp, m * 8)
    if m != 1 or ori_k <= LANES:
        barrier()
        _broadcast(dst, tmp, m, dst_k)


def _broadcast(dst, tmp, m: int, dst_k: int) -> None:
    """Row values dst[0:m] -> dst[m, dst_k] (AlignedBroadCastImpl: Brcb into tmp, then copy back)."""
    rep = -(-m // 8)
    if dst_k == 16 and m != 1:
        _brcb(tmp, dst, rep, BrcbRepeatParams(2, 16))
        _brcb(tmp[8], dst, rep, BrcbRepeatParams(2, 16))
    else:
        _brcb(tmp, dst, rep, BrcbRepeatParams(1, 8))
        if dst_k == 16:
            barrier()
            DataCopy(tmp[8], tmp, 8)
    barrier()
    DataCopy(dst, tmp, m * dst_k)


def _brcb(dst, src, rep: int, params: BrcbRepeatParams) -> None:
    for r0, r in _runs(rep):  # repeat r reads 8 values and writes blocks from r x dstRepStride on
        rd.Brcb(dst[8 * r0 * params.dstRepStride], src[8 * r0], r, params)


def _rowwise(op, dst, src0, row_vals, m: int, k: int, red_k: int) -> None:
    """dst = src0 (op) the row's value, broadcast from its 32 B block (GenericSub/DivNDImpl)."""
    if k < SUB_DIV_ROW:
        full, rest = divmod(m, 8)
        for j in range(k // 8):
            p = BRP(k // 8, k // 8, red_k // 8, k, k, red_k)
            if full:
                op(dst[8 * j], src0[8 * j], row_vals, LANES, full, p)
            if rest:
                base = 8 * full
                op(dst[8 * j + base * k], src0[8 * j + base * k], row_vals[base * red_k], 8 * rest, 1, p)
        return
    reps, rest = divmod(k, LANES)
    p = BRP(1, 1, 0, 8, 8, 0)
    for j in range(m):
        d, s, r = dst[j * k], src0[j * k], row_vals[j * red_k]
        for r0, n in _runs(reps):
            op(d[LANES * r0], s[LANES * r0], r, LANES, n, p)
        if rest:
            op(d[LANES * reps], s[LANES * reps], r, rest, 1, p)


def _tiling(work_floats: int, t_size: int, red_k: int, m: int, ori_m: int, k: int) -> int:
    """Rows per chunk (SoftMaxTilingFunc with CalculateNDSplitM)."""
    per_row = red_k + k + LANES if t_size == 2 else red_k + LANES
    rows = min(work_floats // per_row, m)
    if BASIC_TILE < rows < ori_m:
        rows = rows // BASIC_TILE * BASIC_TILE
    return min(rows, ori_m)


def _args(dst, rest):
    """The four overloads: (src | src, tmp | sum, max, src | sum, max, src, tmp) then the shape info."""
    args = [a for a in rest if a is not None]
    if not args or not isinstance(args[-1], SoftMaxShapeInfo):
        raise KernelRuntimeError("SoftMax needs a SoftMaxShapeInfo(srcM, srcK, oriSrcM, oriSrcK) as its last argument")
    info, tensors = args[-1], args[:-1]
    if not 1 <= len(tensors) <= 4 or not all(isinstance(t, LocalTensor) for t in tensors):
        raise KernelRuntimeError("SoftMax(dst, [sumTensor, maxTensor,] src, [sharedTmpBuffer,] softmaxShapeInfo)")
    if len(tensors) >= 3:
        sum_t, max_t, src = tensors[:3]
        tmp = tensors[3] if len(tensors) == 4 else None
    else:
        sum_t = max_t = None
        src, tmp = tensors[0], (tensors[1] if len(tensors) == 2 else None)
    return src, sum_t, max_t, tmp, info


def SoftMax(dst, sumTensor, maxTensor=None, src=None, sharedTmpBuffer=None, softmaxShapeInfo=None) -> None:
    """Softmax of each row of src [M, K] (first oriK columns); sumTensor/maxTensor [M, 32 B]: each row's sum of
    exp(x - max) and max (float or src's type), block-repeated. Also SoftMax(dst, src, [tmp,] info). Temp >=
    (32/sizeof + K + 64)*4 B; rows per chunk temp/(4(8 + 64)) (half: + K)."""
    src, sum_t, max_t, tmp, info = _args(dst, (sumTensor, maxTensor, src, sharedTmpBuffer, softmaxShapeInfo))
    m, k = chk.count_arg(info.srcM, "srcM"), chk.count_arg(info.srcK, "srcK")
    ori_m, ori_k = info.oriSrcM or m, info.oriSrcK or k
    dt, _ = hl.operands("SoftMax", dst, src, m * k)
    if (k * dt.itemsize) % 32 or not (0 < ori_k <= k and 0 < ori_m <= m):
        raise KernelRuntimeError(f"SoftMax: srcK x sizeof must be 32 B aligned and 0 < oriSrcK <= srcK, "
                                 f"0 < oriSrcM <= srcM (got M={m}, K={k}, oriM={ori_m}, oriK={ori_k})")
    red_dt = dtypes.float32 if sum_t is None else chk.same_dtype("SoftMax sum/max", sum_t, max_t)
    if red_dt != dt and not (dt == dtypes.float16 and red_dt == dtypes.float32):
        raise KernelRuntimeError(f"SoftMax: sum/max are {dt.name} or float, got {red_dt.name}")
    red_k = 32 // red_dt.itemsize
    if sum_t is not None:
        for t in (sum_t, max_t):
            chk.fits(t, ori_m * red_k, "SoftMax sum/max")
    min_bytes = (32 // dt.itemsize + k + LANES) * 4  # GetSoftMaxMinTmpSize on A2: one row
    work = hl.temp_buffer("SoftMax", tmp, min_bytes, dst, src).ReinterpretCast(dtypes.float32)
    rows = _tiling(work._size, dt.itemsize, red_k, m, ori_m, k)
    barrier()
    for r0, mm in hl.chunks(ori_m, rows):
        if mm != rows:  # the tail chunk
            barrier()
        _chunk(dst[r0 * k], src[r0 * k], sum_t and sum_t[r0 * red_k], max_t and max_t[r0 * red_k], work, rows,
               mm, k, ori_k, red_k, dt, red_dt)


def _chunk(dst, src, sum_t, max_t, work, rows, m, k, ori_k, red_k, dt, red_dt) -> None:
    n = m * k
    if dt == dtypes.float32:  # dst is the working tensor; the temp holds the reduce values and the fold
        vals = max_t if max_t is not None else work
        fold = work if max_t is not None else work[rows * red_k]
        _reduce_rows(_MAX, vals, src, fold, m, ori_k, k, red_k)
        barrier()
        _rowwise(v.Sub, dst, src, vals, m, k, red_k)
        barrier()
        v.Exp(dst, dst, n)
        barrier()
        vals = sum_t if sum_t is not None else work
        _reduce_rows(_SUM, vals, dst, fold, m, ori_k, k, red_k)
        barrier()
        _rowwise(v.Div, dst, dst, vals, m, k, red_k)
        return
    x = work  # half: the chunk in float, then the reduce values, then the fold
    own = sum_t is None or red_dt == dtypes.float16
    vals = work[rows * k]
    fold = work[rows * k + rows * red_k] if own else vals
    Cast(x, src, RoundMode.CAST_NONE, n)
    barrier()
    for kind, out in ((_MAX, max_t), (_SUM, sum_t)):
        target = vals if own else out
        _reduce_rows(kind, target, x, fold, m, ori_k, k, red_k)
        barrier()
        if out is not None and own:
            Cast(out, vals, OUT_ROUND, m * red_k)
            barrier()
        if kind is _MAX:
            _rowwise(v.Sub, x, x, target, m, k, red_k)
            barrier()
            v.Exp(x, x, n)
            barrier()
    _rowwise(v.Div, x, x, vals if own else sum_t, m, k, red_k)
    barrier()
    Cast(dst, x, OUT_ROUND, n)
