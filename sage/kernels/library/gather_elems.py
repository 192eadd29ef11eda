"""Element gathers: out[o, k, i] = x[o, idx[o, k, i], i] (torch.gather, take_along_dim), a
vector-core kernel in one of two modes.

x is viewed as [O, D, I] (dense), idx and out as [O, K, I] (dense; idx's other axes equal x's).

- "rows" (I = 1, a gather along the last axis, a row of x fits in UB): each block takes a
  range of the O rows, tiles of T rows go GM -> UB (x rows at a 32 B pitch, the index rows
  beside them); the vector unit turns indices into byte offsets (negative ones wrapped as
  Python does: + D when < 0, done as v*es - D*es*max(min(v, 0), -1) in int32) and one
  `Gather` per row picks the K elements. Dtypes `Gather` lacks (int64, 8-bit) pick them with
  scalar LocalTensor reads instead.
- "scalar" (any axis): every element is one scalar read of x in GM (GlobalTensor.GetValue),
  the indices and results moving through UB in chunks. Slow (a GM scalar read each) but it
  takes any shape.
"""

from __future__ import annotations

from dataclasses import dataclass

from sage.kernels.library.source import DTYPE_SIZE, HEADER, bind_globals, dsl_dtype
from sage.kernels.target import Target

GATHER_DTYPES = {"float32", "float16", "bfloat16", "int32", "int16"}   # the Gather instruction's types
UB_BUDGET = 160 * 1024
SCALAR_CHUNK = 2048          # elements of the scalar mode's index/result chunks


@dataclass(frozen=True)
class GatherElemsSpec:
    name: str
    outer: int                 # O
    rows: int                  # D, the indexed axis of x
    inner: int                 # I
    count: int                 # K, indices per (o, i)
    dtype: str                 # x and out
    index_dtype: str           # int64 or int32
    x: str = "x"
    index: str = "idx"
    out: str = "out"
    x_offset: int = 0
    index_offset: int = 0
    shared_index: bool = False   # one index row for every o (index_select along the last axis)


def _ceil(n: int, m: int) -> int:
    return -(-n // m) * m


def row_tile(spec: GatherElemsSpec) -> int:
    """Rows of x a "rows"-mode tile holds (0: the last-axis mode does not apply)."""
    if spec.inner != 1:
        return 0
    es, ies = DTYPE_SIZE[spec.dtype], DTYPE_SIZE[spec.index_dtype]
    p, pi, po = _ceil(spec.rows * es, 32), _ceil(spec.count * ies, 64), _ceil(spec.count * es, 32)
    per_row = 2 * p + 2 * pi + 2 * (pi * 4 // ies) + 2 * po
    return min(spec.outer, UB_BUDGET // per_row)


def gather_elems_args(spec: GatherElemsSpec) -> list[str]:
    return [spec.x, spec.index, spec.out]


def gather_elems_source(spec: GatherElemsSpec, target: Target, block_dim: int | None = None) -> str:
    if spec.index_dtype not in ("int64", "int32"):
        raise ValueError(f"{spec.index_dtype} indices (int64 or int32 only)")
    if row_tile(spec) >= 1:
        return _rows_source(spec, target, block_dim)
    from sage.kernels.library.gather_columns import column_plan, gather_columns_source
    if column_plan(spec, block_dim or target.vector_cores)[0]:    # vector Gathers over column stripes
        return gather_columns_source(spec, target, block_dim)
    from sage.kernels.library.gather_chunks import gather_chunks_source, index_chunk
    if spec.inner == 1 and index_chunk(spec) >= 1:      # a row in UB, its indices streamed in chunks
        return gather_chunks_source(spec, target, block_dim)
    if spec.shared_index:
        raise ValueError(f"a row of {spec.rows} elements leaves no room in UB for a chunk of indices")
    return _scalar_source(spec, target, block_dim)


def launcher(n: str, units: int, target: Target, block_dim: int | None) -> tuple[int, int, str]:
    blocks = max(1, min(block_dim or target.vector_cores, units))
    per = -(-units // blocks)
    blocks = -(-units // per)
    tail = f'''

@kernel
def {n}_kernel(x, idx, out):
    op = Kernel_{n}()
    op.Init(x, idx, out)
    op.Process()


def {n}_launch(x, idx, out):
    {n}_kernel[{blocks}](x, idx, out)
'''
    return per, blocks, tail


def _rows_source(spec: GatherElemsSpec, target: Target, block_dim: int | None) -> str:
    es, ies = DTYPE_SIZE[spec.dtype], DTYPE_SIZE[spec.index_dtype]
    dt, it = dsl_dtype(spec.dtype), dsl_dtype(spec.index_dtype)
    d, k = spec.rows, spec.count
    p, pi, po = _ceil(d * es, 32), _ceil(k * ies, 64), _ceil(k * es, 32)
    pi32 = pi * 4 // ies                     # an index row's pitch as int32 offsets (bytes)
    per, _, tail = launcher(spec.name, spec.outer, target, block_dim)
    tile = min(row_tile(spec), per)
    n = spec.name
    if spec.dtype in GATHER_DTYPES:
        to_int32 = (f"Cast(off, ix, RoundMode.CAST_NONE, t * {pi // ies})" if ies == 8
                    else f"Adds(off, ix, 0, t * {pi // 4})")
        pick = f'''
        {to_int32}
        c = t * {pi32 // 4}
        Mins(neg, off, 0, c)
        Maxs(neg, neg, -1, c)
        Muls(neg, neg, {-d * es}, c)
        Muls(off, off, {es}, c)
        Add(off, off, neg, c)
        for q in range(t):
            Gather(ot[q * {po // es}], xt, off[q * {pi32 // 4}], q * {p}, {k})'''
        sync_in, sync_out = "", ""
    else:                                    # no Gather of this type: scalar UB reads
        pick = f'''
        for q in range(t):
            for j in range({k}):
                v = ix.GetValue(q * {pi // ies} + j)
                if v < 0:
                    v = v + {d}
                ot.SetValue(q * {po // es} + j, xt.GetValue(q * {p // es} + v))'''
        sync_in = "\n        SetFlag(HardEvent.MTE2_S, 0)\n        WaitFlag(HardEvent.MTE2_S, 0)"
        sync_out = "\n        SetFlag(HardEvent.S_MTE3, 0)\n        WaitFlag(HardEvent.S_MTE3, 0)"
    if spec.shared_index:                    # the one index row, once per tile row
        load_index = f'''
            for q in range(t):
                DataCopyPad(ix[q * {pi // ies}], self.g_i[{spec.index_offset}], DataCopyExtParams(1, {k * ies}, 0, 0, 0),
                            DataCopyPadExtParams(False, 0, 0, 0))'''
    else:
        load_index = f'''
            DataCopyPad(ix, self.g_i[{spec.index_offset} + r * {k}],
                        DataCopyExtParams(t, {k * ies}, 0, {(pi - _ceil(k * ies, 32)) // 32}, 0),
                        DataCopyPadExtParams(False, 0, 0, 0))'''
    return f'''{HEADER}
class Kernel_{n}:
    def Init(self, x, idx, out):
        self.r0 = GetBlockIdx() * {per}
        self.r1 = min({spec.outer}, self.r0 + {per})
{bind_globals(x="x", i="idx", o="out")}
        self.pipe = TPipe()
        self.qx = TQue(TPosition.VECIN, 2)
        self.pipe.InitBuffer(self.qx, 2, {tile * p})
        self.qi = TQue(TPosition.VECIN, 2)
        self.pipe.InitBuffer(self.qi, 2, {tile * pi})
        self.qo = TQue(TPosition.VECOUT, 2)
        self.pipe.InitBuffer(self.qo, 2, {tile * po})
        self.b_off = TBuf(TPosition.VECCALC)
        self.pipe.InitBuffer(self.b_off, {tile * pi32})
        self.b_neg = TBuf(TPosition.VECCALC)
        self.pipe.InitBuffer(self.b_neg, {tile * pi32})

    def Process(self):
        for r in range(self.r0, self.r1, {tile}):
            t = min({tile}, self.r1 - r)
            xt = self.qx.AllocTensor({dt})
            DataCopyPad(xt, self.g_x[{spec.x_offset} + r * {d}], DataCopyExtParams(t, {d * es}, 0, 0, 0),
                        DataCopyPadExtParams(False, 0, 0, 0))
            self.qx.EnQue(xt)
            ix = self.qi.AllocTensor({it}){load_index}
            self.qi.EnQue(ix)
            self.Pick(r, t)

{pick_method("r, t", dt, it, sync_in + pick + sync_out,
             f"DataCopyPad(self.g_o[r * {k}], ot, DataCopyExtParams(t, {k * es}, 0, 0, 0))")}{tail}'''


def pick_method(args: str, dt: str, it: str, pick: str, store: str) -> str:
    """The vector side of a Gather tile: x and index tiles from their queues, `pick` into `ot`
    (offsets in `off`, wraps in `neg`), and `store` of `ot` back to GM."""
    return f'''    def Pick(self, {args}):
        xt = self.qx.DeQue({dt})
        ix = self.qi.DeQue({it})
        ot = self.qo.AllocTensor({dt})
        off = self.b_off.Get(int32)
        neg = self.b_neg.Get(int32){pick}
        self.qx.FreeTensor(xt)
        self.qi.FreeTensor(ix)
        self.qo.EnQue(ot)
        ot = self.qo.DeQue({dt})
        {store}
        self.qo.FreeTensor(ot)
'''


def _scalar_source(spec: GatherElemsSpec, target: Target, block_dim: int | None) -> str:
    es, ies = DTYPE_SIZE[spec.dtype], DTYPE_SIZE[spec.index_dtype]
    dt, it = dsl_dtype(spec.dtype), dsl_dtype(spec.index_dtype)
    d, k, i_ = spec.rows, spec.count, spec.inner
    units = spec.outer * k * i_
    per, _, tail = launcher(spec.name, units, target, block_dim)
    chunk = min(SCALAR_CHUNK, per)
    n = spec.name
    return f'''{HEADER}
class Kernel_{n}:
    def Init(self, x, idx, out):
        self.e0 = GetBlockIdx() * {per}
        self.e1 = min({units}, self.e0 + {per})
{bind_globals(x="x", i="idx", o="out")}
        self.pipe = TPipe()
        self.b_i = TBuf(TPosition.VECCALC)
        self.pipe.InitBuffer(self.b_i, {_ceil(chunk * ies, 32)})
        self.b_o = TBuf(TPosition.VECCALC)
        self.pipe.InitBuffer(self.b_o, {_ceil(chunk * es, 32)})

    def Process(self):
        ix = self.b_i.Get({it})
        ot = self.b_o.Get({dt})
        for e in range(self.e0, self.e1, {chunk}):
            c = min({chunk}, self.e1 - e)
            PipeBarrier(PIPE_ALL)
            DataCopyPad(ix, self.g_i[{spec.index_offset} + e], DataCopyExtParams(1, c * {ies}, 0, 0, 0),
                        DataCopyPadExtParams(False, 0, 0, 0))
            PipeBarrier(PIPE_ALL)
            for j in range(c):
                u = e + j
                v = ix.GetValue(j)
                if v < 0:
                    v = v + {d}
                o = u // {k * i_}
                i = u % {i_}
                ot.SetValue(j, self.g_x.GetValue({spec.x_offset} + (o * {d} + v) * {i_} + i))
            PipeBarrier(PIPE_ALL)
            DataCopyPad(self.g_o[e], ot, DataCopyExtParams(1, c * {es}, 0, 0, 0))
{tail}'''
