"""The element scatter along the last axis when a row of out fits UB but not with all of its
index and src row: the row stays in UB and the index/src row streams through in chunks of C,
walked in k order (so repeated indices fold as torch's CPU loop folds them).
A unit is one row (a lead position); blocks own whole rows, so no copy of x is needed first.

A row too long for UB with room for MIN_CHUNK indices (with its float32 copy when the spec
is wide: a 1-d fp16 index_put(accumulate) over 65536 elements, level1/19 case 14, needs
384 KB) is cut in bands of B elements, a unit each: every band walks all the indices in k
order and places those that land in it, so no two blocks ever touch one element and the
float32 sums are rounded once, as in a whole row.
"""

from __future__ import annotations

import math

from sage.kernels.library import scatter_elems
from sage.kernels.library.scatter_elems import (ScatterElemsSpec, _ceil32, _literal, _offsets, _put, acc, geometry,
                                                narrow, widen, xbytes)
from sage.kernels.library.source import DTYPE_SIZE

MIN_CHUNK = 64             # indices a chunk holds at least


def _per_index(spec: ScatterElemsSpec) -> int:
    """UB bytes one streamed index (and its src element) takes."""
    return DTYPE_SIZE[spec.index_dtype] + (DTYPE_SIZE[spec.dtype] if spec.value is None else 0)


def row_band(spec: ScatterElemsSpec) -> int:
    """Elements of a row one unit holds: the whole row when it leaves room for MIN_CHUNK
    indices, else a band (a multiple of 32 elements) taking half of UB, the rest for chunks."""
    es = DTYPE_SIZE[spec.dtype]
    room = scatter_elems.UB_BUDGET - 64 - MIN_CHUNK * _per_index(spec)
    if xbytes(spec, _ceil32(spec.rows * es)) <= room:
        return spec.rows
    per_element = xbytes(spec, 32) // (32 // es)
    return (scatter_elems.UB_BUDGET // 2) // per_element // 32 * 32


def index_chunk(spec: ScatterElemsSpec) -> int:
    """Indices a chunk holds beside the row's band (0: this mode does not apply)."""
    band = row_band(spec)
    if spec.inner != 1 or band < 32 and band < spec.rows:
        return 0
    room = scatter_elems.UB_BUDGET - xbytes(spec, _ceil32(band * DTYPE_SIZE[spec.dtype])) - 64
    c = room // _per_index(spec) // 32 * 32
    return min(c, spec.count) if c >= MIN_CHUNK else 0


def row_chunks(spec: ScatterElemsSpec) -> tuple[int, tuple[int, int, int], str]:
    es, ies = DTYPE_SIZE[spec.dtype], DTYPE_SIZE[spec.index_dtype]
    d, k = spec.rows, spec.count
    c, band = index_chunk(spec), row_band(spec)
    bands = -(-d // band)
    lead, _, _ = geometry(spec)
    (last, so, si, ss), rest = lead[-1], lead[:-1]
    positions = math.prod(e for e, *_ in rest) * last
    sizes = (_ceil32(band * es), _ceil32(c * ies), _ceil32(c * es) if spec.value is None else 32)
    off_o, off_i, off_s = _offsets(rest, "m")
    load_src = "" if spec.value is not None else f'''
                DataCopyPad(sv, self.g_s[{spec.src_offset} + {off_s} + r * {ss} + k0], DataCopyExtParams(1, kn * {es}, 0, 0, 0),
                            DataCopyPadExtParams(False, 0, 0, 0))'''
    new = _literal(spec) if spec.value is not None else "sv.GetValue(j)"
    # one band: every index lands in it, no test needed
    place = (_put(spec, acc(spec), "v", new) if bands == 1 else
             f"if v >= b0 and v < b0 + bn:\n                        {_put(spec, acc(spec), 'v - b0', new)}")
    return positions * bands, sizes, f'''
        for u in range(self.u0, self.u1):
            m = u // {bands * last}
            r = u // {bands} % {last}
            b0 = u % {bands} * {band}
            bn = min({band}, {d} - b0)
            PipeBarrier(PIPE_ALL)
            DataCopyPad(xt, self.g_x[{spec.x_offset} + {off_o} + r * {so} + b0], DataCopyExtParams(1, bn * {es}, 0, 0, 0),
                        DataCopyPadExtParams(False, 0, 0, 0))
            PipeBarrier(PIPE_ALL){widen(spec, str(sizes[0] // es))}
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
                    {place}
            PipeBarrier(PIPE_ALL){narrow(spec, str(sizes[0] // es))}
            DataCopyPad(self.g_o[{off_o} + r * {so} + b0], xt, DataCopyExtParams(1, bn * {es}, 0, 0, 0))'''
