"""The element scatter along the last axis when a row of out fits UB but not with all of its
index and src row: the row stays in UB and the index/src row streams through in chunks of C,
walked in k order (so repeated indices fold as torch's CPU loop folds them). A 1-d
index_put(accumulate) of fp16/bf16 over 65536 elements (level1/19 case 14) is one such row.
A unit is one row (a lead position); blocks own whole rows, so no copy of x is needed first.
"""

from __future__ import annotations

import math

from sage.kernels.library import scatter_elems
from sage.kernels.library.scatter_elems import (ScatterElemsSpec, _ceil32, _literal, _offsets, _put, acc, geometry,
                                                narrow, widen, xbytes)
from sage.kernels.library.source import DTYPE_SIZE

MIN_CHUNK = 64             # indices a chunk holds at least


def index_chunk(spec: ScatterElemsSpec) -> int:
    """Indices a chunk holds beside the row (0: the row leaves no room for MIN_CHUNK)."""
    if spec.inner != 1:
        return 0
    es, ies = DTYPE_SIZE[spec.dtype], DTYPE_SIZE[spec.index_dtype]
    room = scatter_elems.UB_BUDGET - xbytes(spec, _ceil32(spec.rows * es)) - 64
    c = room // (ies + (es if spec.value is None else 0)) // 32 * 32
    return min(c, spec.count) if c >= MIN_CHUNK else 0


def row_chunks(spec: ScatterElemsSpec) -> tuple[int, tuple[int, int, int], str]:
    es, ies = DTYPE_SIZE[spec.dtype], DTYPE_SIZE[spec.index_dtype]
    d, k = spec.rows, spec.count
    c = index_chunk(spec)
    lead, _, _ = geometry(spec)
    (last, so, si, ss), rest = lead[-1], lead[:-1]
    positions = math.prod(e for e, *_ in rest) * last
    sizes = (_ceil32(d * es), _ceil32(c * ies), _ceil32(c * es) if spec.value is None else 32)
    off_o, off_i, off_s = _offsets(rest, "m")
    load_src = "" if spec.value is not None else f'''
                DataCopyPad(sv, self.g_s[{spec.src_offset} + {off_s} + r * {ss} + k0], DataCopyExtParams(1, kn * {es}, 0, 0, 0),
                            DataCopyPadExtParams(False, 0, 0, 0))'''
    new = _literal(spec) if spec.value is not None else "sv.GetValue(j)"
    return positions, sizes, f'''
        for u in range(self.u0, self.u1):
            m = u // {last}
            r = u % {last}
            PipeBarrier(PIPE_ALL)
            DataCopyPad(xt, self.g_x[{spec.x_offset} + {off_o} + r * {so}], DataCopyExtParams(1, {d * es}, 0, 0, 0),
                        DataCopyPadExtParams(False, 0, 0, 0))
            PipeBarrier(PIPE_ALL){widen(spec, str(_ceil32(d * es) // es))}
            for k0 in range(0, {k}, {c}):
                kn = min({c}, {k} - k0)
                PipeBarrier(PIPE_ALL)
                DataCopyPad(ix, self.g_i[{spec.index_offset} + {off_i} + r * {si} + k0], DataCopyExtParams(1, kn * {ies}, 0, 0, 0),
                            DataCopyPadExtParams(False, 0, 0, 0)){load_src}
                PipeBarrier(PIPE_ALL)
                for j in range(kn):
                    v = ix.GetValue(j)
                    if v < 0:
                        v = v + {d}
                    {_put(spec, acc(spec), "v", new)}
            PipeBarrier(PIPE_ALL){narrow(spec, str(_ceil32(d * es) // es))}
            DataCopyPad(self.g_o[{off_o} + r * {so}], xt, DataCopyExtParams(1, {d * es}, 0, 0, 0))'''
