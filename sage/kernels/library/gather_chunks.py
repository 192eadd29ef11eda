"""Gathers along the last axis with more indices than fit in UB beside a row of x:
out[o, n] = x[o, idx[n]] with one index row shared by every o (index_select: nll_loss's
weight[target] over a million targets; an embedding of a short table), or out[o, n] =
x[o, idx[o, n]] (torch.gather of rows of 11008 elements and 5504 indices). The "rows" mode of
gather_elems holds whole index rows; here the indices stream through UB in chunks of C.

A unit is (o, chunk): x row o (D elements, 32 B pitch) and C indices go GM -> UB, the vector
unit turns the indices into byte offsets (negative ones wrapped as Python does: + D when < 0,
done as v*es - D*es*max(min(v, 0), -1) in int32) and one `Gather` picks C elements, which go
back to GM. Queues of depth 2 let the next unit's loads overlap this one's Gather and store.
Dtypes `Gather` lacks (int64, 8-bit) pick with scalar LocalTensor reads instead.
"""

from __future__ import annotations

from sage.kernels.library import gather_elems
from sage.kernels.library.gather_elems import GATHER_DTYPES, GatherElemsSpec, launcher, pick_method
from sage.kernels.library.source import DTYPE_SIZE, HEADER, bind_globals, dsl_dtype
from sage.kernels.target import Target

ALIGN = 64                 # a chunk is a multiple of 64 indices: every UB buffer stays 32 B aligned


def _ceil(n: int, m: int) -> int:
    return -(-n // m) * m


def index_chunk(spec: GatherElemsSpec) -> int:
    """Indices one unit holds (0: not even ALIGN of them fit beside a row of x)."""
    es, ies = DTYPE_SIZE[spec.dtype], DTYPE_SIZE[spec.index_dtype]
    p = _ceil(spec.rows * es, 32)
    per_index = 2 * ies + 2 * 4 + 2 * es          # double-buffered indices and picks, int32 offsets and wraps
    c = (gather_elems.UB_BUDGET - 2 * p) // per_index // ALIGN * ALIGN
    return min(c, _ceil(spec.count, ALIGN)) if c >= ALIGN else 0


def gather_chunks_source(spec: GatherElemsSpec, target: Target, block_dim: int | None = None) -> str:
    es, ies = DTYPE_SIZE[spec.dtype], DTYPE_SIZE[spec.index_dtype]
    dt, it = dsl_dtype(spec.dtype), dsl_dtype(spec.index_dtype)
    d, k = spec.rows, spec.count
    c = index_chunk(spec)
    if c < 1:
        raise ValueError(f"a row of {d} elements leaves no room in UB for a chunk of indices")
    chunks = -(-k // c)
    p = _ceil(d * es, 32)
    per, _, tail = launcher(spec.name, spec.outer * chunks, target, block_dim)
    n = spec.name
    index_row = "" if spec.shared_index else f"o * {k} + "      # torch.gather: row o's own indices
    if spec.dtype in GATHER_DTYPES:
        to_int32 = "Cast(off, ix, RoundMode.CAST_NONE, kn)" if ies == 8 else "Adds(off, ix, 0, kn)"
        pick = f'''
        {to_int32}
        Mins(neg, off, 0, kn)
        Maxs(neg, neg, -1, kn)
        Muls(neg, neg, {-d * es}, kn)
        Muls(off, off, {es}, kn)
        Add(off, off, neg, kn)
        Gather(ot, xt, off, 0, kn)'''
        sync_in, sync_out = "", ""
    else:                                    # no Gather of this type: scalar UB reads
        pick = f'''
        for j in range(kn):
            v = ix.GetValue(j)
            if v < 0:
                v = v + {d}
            ot.SetValue(j, xt.GetValue(v))'''
        sync_in = "\n        SetFlag(HardEvent.MTE2_S, 0)\n        WaitFlag(HardEvent.MTE2_S, 0)"
        sync_out = "\n        SetFlag(HardEvent.S_MTE3, 0)\n        WaitFlag(HardEvent.S_MTE3, 0)"
    return f'''{HEADER}
class Kernel_{n}:
    def Init(self, x, idx, out):
        self.u0 = GetBlockIdx() * {per}
        self.u1 = min({spec.outer * chunks}, self.u0 + {per})
{bind_globals(x="x", i="idx", o="out")}
        self.pipe = TPipe()
        self.qx = TQue(TPosition.VECIN, 2)
        self.pipe.InitBuffer(self.qx, 2, {p})
        self.qi = TQue(TPosition.VECIN, 2)
        self.pipe.InitBuffer(self.qi, 2, {c * ies})
        self.qo = TQue(TPosition.VECOUT, 2)
        self.pipe.InitBuffer(self.qo, 2, {c * es})
        self.b_off = TBuf(TPosition.VECCALC)
        self.pipe.InitBuffer(self.b_off, {c * 4})
        self.b_neg = TBuf(TPosition.VECCALC)
        self.pipe.InitBuffer(self.b_neg, {c * 4})

    def Process(self):
        for u in range(self.u0, self.u1):
            o = u // {chunks}
            c0 = (u % {chunks}) * {c}
            kn = min({c}, {k} - c0)
            xt = self.qx.AllocTensor({dt})
            DataCopyPad(xt, self.g_x[{spec.x_offset} + o * {d}], DataCopyExtParams(1, {d * es}, 0, 0, 0),
                        DataCopyPadExtParams(False, 0, 0, 0))
            self.qx.EnQue(xt)
            ix = self.qi.AllocTensor({it})
            DataCopyPad(ix, self.g_i[{spec.index_offset} + {index_row}c0], DataCopyExtParams(1, kn * {ies}, 0, 0, 0),
                        DataCopyPadExtParams(False, 0, 0, 0))
            self.qi.EnQue(ix)
            self.Pick(o * {k} + c0, kn)

{pick_method("dst, kn", dt, it, sync_in + pick + sync_out,
             f"DataCopyPad(self.g_o[dst], ot, DataCopyExtParams(1, kn * {es}, 0, 0, 0))")}{tail}'''
