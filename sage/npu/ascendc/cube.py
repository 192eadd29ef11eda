"""The cube path: GM -> L1 (ND -> NZ) -> LoadData -> L0A/L0B -> Mmad -> L0C -> Fixpipe -> GM.

Values are stored row-major; fractal layouts decide costs, padding and checks. A matrix in
L1/L0 has its rows padded to 16 and its row length padded to the fractal width
(16 elements, 32 for int8); Mmad reads A as [M, K] and B as [K, N] with those pitches.
"""

from __future__ import annotations

import numpy as np

from sage.npu import dtypes
from sage.npu.errors import AlignmentError, BoundsError, KernelRuntimeError, UnsupportedError
from sage.npu.sim.core import FIX, M, MTE1, MTE2, current_core
from sage.npu.sim.lanes import lane_ready
from sage.npu.sim.opcodes import AIC, LOCAL_COPY, MAD, PATH_INDEX
from sage.npu.ascendc import _checks as chk
from sage.npu.ascendc.datamove import _each, _row, gm_transfer, mark_layout
from sage.npu.ascendc.params import FixpipeParams, LoadData2DParams, MmadParams, Nd2NzParams
from sage.npu.ascendc.tensors import GlobalTensor, LocalTensor

_ACC = {dtypes.float16: dtypes.float32, dtypes.bfloat16: dtypes.float32, dtypes.float32: dtypes.float32,
        dtypes.int8: dtypes.int32}


# fp16 -> fp32 as a table of all 65,536 halves (made by numpy's own astype, so bit for bit the
# same values, NaN payloads included): a lookup is faster than numpy's half conversion, and
# Mmad widens every A and B tile it multiplies (1024 tiles of 16 K halves in a 1024^3 matmul)
_HALF_TO_FLOAT = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16).astype(np.float32)


def _widen(x: np.ndarray, acc: np.dtype) -> np.ndarray:
    """x as `acc` (a new contiguous array): what x.astype(acc) gives."""
    if x.dtype == np.float16 and acc == np.float32:
        return _HALF_TO_FLOAT.take(x.view(np.uint16))
    return x.astype(acc)


SHARED_TILES = 16   # the distinct tiles of one Mmad a lane's tile is compared with before it is widened


def _widen_all(tiles: list[np.ndarray], acc: np.dtype) -> list[np.ndarray]:
    """Each lane's operand tile widened to `acc`. Lanes whose tiles hold the same bytes share one
    widened array (Mmad only reads it): the blocks of a matmul lane group share rows and columns
    of tiles (a 1024^3 matmul's 24 lanes hold 3 distinct A and 8 distinct B tiles per Mmad), and a
    byte comparison costs a hundredth of a conversion. Only the last SHARED_TILES distinct tiles
    are compared with, so lanes that all differ cost at most that many comparisons each."""
    if len(tiles) == 1:
        return [_widen(tiles[0], acc)]
    out: list[np.ndarray] = []
    done: list[tuple[bytes, np.ndarray]] = []
    for x in tiles:
        raw = x.tobytes()
        for key, wide in done:
            if key == raw:
                out.append(wide)
                break
        else:
            wide = _widen(x, acc)
            done.append((raw, wide))
            del done[:-SHARED_TILES]
            out.append(wide)
    return out


def _ceil(n: int, unit: int) -> int:
    return -(-n // unit) * unit


def col_unit(dt: np.dtype) -> int:
    return max(16, 32 // dt.itemsize)


def _lane_rows(core) -> range | list[None]:
    """The lanes whose local memory a cube instruction fills one at a time ([None]: a lone block)."""
    return [None] if core.lanes is None else range(core.weight)


def copy_nd2nz(core, dst: LocalTensor, src: GlobalTensor, p: Nd2NzParams) -> None:
    """DataCopy(l1, gm, Nd2NzParams(1, nValue, dValue, 0, srcDValue, dstNzC0Stride, 1, 0))."""
    core.claim(AIC, "DataCopy GM->L1")
    if dst.dtype != src.dtype:
        raise KernelRuntimeError(f"DataCopy: dst is {dst.dtype.name} but src is {src.dtype.name}")
    if p.ndNum != 1:
        raise KernelRuntimeError("Nd2NzParams: only ndNum=1 is simulated; issue one DataCopy per matrix")
    chk.aligned(dst, "DataCopy (ND->NZ) dst")
    rows, cols = chk.count_arg(p.nValue, "nValue"), chk.count_arg(p.dValue, "dValue")
    pitch_src = p.srcDValue or cols
    rows_pad = max(_ceil(rows, 16), p.dstNzC0Stride or 0)
    cols_pad = _ceil(cols, col_unit(dst.dtype))
    if rows < 1 or cols < 1:
        raise KernelRuntimeError("Nd2NzParams: nValue and dValue must be >= 1")
    chk.fits(dst, rows_pad * cols_pad, "DataCopy (ND->NZ)")
    # (one view per lane of a lane group: each lane's rows come from its own GM offset)
    views = [(lane, chk.rows_view(src._buf.data, off, rows, cols, pitch_src, "DataCopy (ND->NZ) src",
                                  "the GM tensor")) for lane, off in _each(core, src._off)]
    isz = dst.dtype.itemsize
    local_span = dst.span(rows_pad * cols_pad)
    gm_transfer(core, MTE2, "DataCopy(ND2NZ)", "GM->L1", src, 0, (rows - 1) * pitch_src + cols, rows * cols * isz,
                rows, pitch_src * isz, local_span, True)
    mark_layout(dst._slot, local_span[1], local_span[2], nd=False)
    for lane, s in views:
        d = _row(dst._arr, lane)[:rows_pad * cols_pad].reshape(rows_pad, cols_pad)
        d[...] = 0
        d[:rows, :cols] = s


@lane_ready
def LoadData(dst, src, params: LoadData2DParams) -> None:
    """LoadData(l0a_or_l0b, l1, LoadData2DParams(rows, cols, srcStride, ifTranspose)): copy the rows x cols
    tile starting at src (a view t[offset] of a larger L1 matrix with row pitch srcStride) into dense rows x cols
    (cols x rows if transposed) in L0A/L0B. Cost: MTE1 at the L1->L0 rate."""
    core = current_core("LoadData")
    core.claim(AIC, "LoadData")
    dst = chk.local(dst, "LoadData dst")
    src = chk.local(src, "LoadData src", "L1")
    pos = dst._slot.space.name
    if pos not in ("L0A", "L0B"):
        raise KernelRuntimeError(f"LoadData writes L0A (A2) or L0B (B2), not {pos}")
    if dst.dtype != src.dtype:
        raise KernelRuntimeError(f"LoadData: dst is {dst.dtype.name} but src is {src.dtype.name}")
    rows, cols = chk.count_arg(params.rows, "rows"), chk.count_arg(params.cols, "cols")
    unit = col_unit(dst.dtype)
    if rows % 16 or cols % unit or rows < 1 or cols < 1:
        raise AlignmentError(f"LoadData moves whole fractals: rows must be a multiple of 16 and cols of {unit} "
                             f"(got {rows} x {cols}); pad the tile")
    chk.aligned(dst, "LoadData dst", 512)
    chk.aligned(src, "LoadData src")
    pitch = params.srcStride or cols
    read = src.span((rows - 1) * pitch + cols)
    # (rows one fractal wide, 32 B, are laid out the same in ND and NZ: those may come either way)
    if pitch != unit and any(a < read[2] and b > read[1] for a, b in src._slot.nd):
        raise UnsupportedError(
            "LoadData reads L1 as NZ fractals, but these L1 bytes came from a plain DataCopy from GM, which "
            "copies ND rows as they are; on the chip the cube would read them in the wrong order. Copy cube "
            "operands into L1 with DataCopy(l1, gm, Nd2NzParams(...)) (CANN DataCopy, the ND2NZ form)")
    views = [(lane, chk.rows_view(_row(src._arr, lane), 0, rows, cols, pitch, "LoadData src", "the L1 tensor"))
             for lane in _lane_rows(core)]
    chk.fits(dst, rows * cols, "LoadData dst")
    nbytes = rows * cols * dst.dtype.itemsize
    path = "L1->L0A" if pos == "L0A" else "L1->L0B"
    core.instr(MTE1, "LoadData", LOCAL_COPY, PATH_INDEX[path], nbytes, 1, 0, None, reads=(src.span((rows - 1) * pitch + cols),), writes=(dst.span(rows * cols),))
    for lane, s in views:
        _row(dst._arr, lane)[:rows * cols] = (s.T if params.ifTranspose else s).reshape(-1)


@lane_ready
def Mmad(c, a, b, params: MmadParams) -> None:
    """Mmad(c_l0c, a_l0a, b_l0b, MmadParams(m, n, k, cmatrixInitVal)): C[m,n] (+)= A[m,k] @ B[k,n], fp32
    accumulation (int32 for int8). Read row-major: A as [ceil16(m), ceil16(k)], B as [ceil16(k), ceil16(n)]
    (k and B's n padded to 32 for int8), C as [ceil16(m), ceil16(n)]; padding is ignored (CANN Mmad, Atlas A2).
    Cost on M: the cube formula below."""
    core = current_core("Mmad")
    core.claim(AIC, "Mmad")
    c = chk.local(c, "Mmad c", "L0C")
    a = chk.local(a, "Mmad a", "L0A")
    b = chk.local(b, "Mmad b", "L0B")
    if a.dtype != b.dtype or a.dtype not in _ACC:
        raise KernelRuntimeError(f"Mmad: A and B must share one of float16/bfloat16/float32/int8, got {a.dtype.name}, {b.dtype.name}")
    if c.dtype != _ACC[a.dtype]:
        raise KernelRuntimeError(f"Mmad: C must be {_ACC[a.dtype].name} for {a.dtype.name} inputs, got {c.dtype.name}")
    m, n, k = (chk.count_arg(v, f"MmadParams.{nm}") for v, nm in ((params.m, "m"), (params.n, "n"), (params.k, "k")))
    if min(m, n, k) < 1:
        raise KernelRuntimeError("Mmad: m, n and k must be >= 1")
    unit = col_unit(a.dtype)
    mp, kp, np_, nb = _ceil(m, 16), _ceil(k, unit), _ceil(n, 16), _ceil(n, unit)
    for t, need, what in ((a, mp * kp, "A"), (b, kp * nb, "B"), (c, mp * np_, "C")):
        if need > t._size:
            raise BoundsError(f"Mmad: {what} needs {need} elements for m={m} n={n} k={k} (padded), its tensor holds {t._size}")
    reads = (a.span(mp * kp), b.span(kp * nb)) + (() if params.cmatrixInitVal else (c.span(mp * np_),))
    core.instr(M, "Mmad", MAD, m, n, k, a.dtype.itemsize, None, reads=reads, writes=(c.span(mp * np_),))
    acc = _ACC[a.dtype]
    rows = _lane_rows(core)
    As = _widen_all([_row(a._arr, lane)[:mp * kp].reshape(mp, kp)[:m, :k] for lane in rows], acc)
    Bs = _widen_all([_row(b._arr, lane)[:kp * nb].reshape(kp, nb)[:k, :n] for lane in rows], acc)
    for lane, A, B in zip(rows, As, Bs):  # (lane by lane, the very product a block alone computes: same BLAS call)
        C = _row(c._arr, lane)[:mp * np_].reshape(mp, np_)
        prod = A @ B
        if params.cmatrixInitVal:
            C[...] = 0
            C[:m, :n] = prod
        else:
            C[:m, :n] += prod


@lane_ready
def Fixpipe(dst, src, params: FixpipeParams) -> None:
    """Fixpipe(gm, l0c, FixpipeParams(mSize, nSize, srcStride, dstStride, reluEn)): write an mSize x nSize tile
    to GM (row pitch dstStride, 0 = nSize), converting fp32 to the GM dtype (fp16/bf16 round to nearest).
    Cost on FIX: one L0C->GM transfer of the tile."""
    from sage.npu.ascendc.cast import RoundMode, convert
    core = current_core("Fixpipe")
    core.claim(AIC, "Fixpipe")
    src = chk.local(src, "Fixpipe src", "L0C")
    dst = chk.gm_tensor(dst, "Fixpipe dst")
    m, n = chk.count_arg(params.mSize, "mSize"), chk.count_arg(params.nSize, "nSize")
    if m < 1 or n < 1:
        raise KernelRuntimeError("Fixpipe: mSize and nSize must be >= 1")
    sp = params.srcStride or _ceil(n, 16)
    dp = params.dstStride or n
    pairs = [(chk.rows_view(_row(src._arr, lane), 0, m, n, sp, "Fixpipe src", "the L0C tensor"),
              chk.rows_view(dst._buf.data, off, m, n, dp, "Fixpipe dst", "the GM tensor"))
             for lane, off in _each(core, dst._off)]
    isz = dst.dtype.itemsize
    # the FIX unit converts NZ -> ND while it streams: one transfer, not one burst per row
    gm_transfer(core, FIX, "Fixpipe", "L0C->GM", dst, 0, (m - 1) * dp + n, m * n * isz, 1, dp * isz,
                src.span((m - 1) * sp + n), False, rows=(n * isz, dp * isz, m))
    for s, d in pairs:
        vals = np.maximum(s, 0) if params.reluEn else s
        out = convert(np.ascontiguousarray(vals), dst.dtype, RoundMode.CAST_RINT).astype(dst.dtype, copy=False)
        d[...] = out if core.atomic is None else core.atomic(d, out)
