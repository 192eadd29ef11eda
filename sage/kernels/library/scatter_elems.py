"""Element scatters: out = x with out[o, idx[o, k, i], i] = src[o, k, i] (torch.scatter with a
src tensor, or with one value for every element), a vector-core kernel in one of two modes. The vector unit has no scatter, so
the scalar unit places every element.

out and x are viewed as [O, D, I] (dense), idx and src as [O, K, I] (dense).

- "rows" (I = 1, a scatter along the last axis, a row fits in UB): a tile of x rows, their
  index and src rows go to UB, the scalar unit writes each src value into its row slot
  (negative indices wrapped as Python does), and the rows go back to out whole. Every block
  owns its rows, so the result needs no copy beforehand.
- "scalar" (any axis): out already holds x (a copy launch first); each src element is one
  scalar GM write (GlobalTensor.SetValue).
"""

from __future__ import annotations

from dataclasses import dataclass

from sage.kernels.library.source import DTYPE_SIZE, HEADER, dsl_dtype
from sage.kernels.target import Target

UB_BUDGET = 160 * 1024
SCALAR_CHUNK = 2048


@dataclass(frozen=True)
class ScatterElemsSpec:
    name: str
    outer: int                 # O
    rows: int                  # D, the indexed axis of out
    inner: int                 # I
    count: int                 # K
    dtype: str                 # x, src and out
    index_dtype: str
    x: str = "x"
    index: str = "idx"
    src: str = "src"
    out: str = "out"
    x_offset: int = 0
    index_offset: int = 0
    src_offset: int = 0
    value: float | None = None  # scatter.value: this number everywhere, and no src tensor


def _ceil32(n: int) -> int:
    return -(-n // 32) * 32


def row_tile(spec: ScatterElemsSpec) -> int:
    """Rows a "rows"-mode tile holds (0: that mode does not apply; out must then start as a copy of x)."""
    if spec.inner != 1:
        return 0
    es, ies = DTYPE_SIZE[spec.dtype], DTYPE_SIZE[spec.index_dtype]
    per_row = _ceil32(spec.rows * es) + _ceil32(spec.count * ies) + (_ceil32(spec.count * es) if spec.value is None else 0)
    return min(spec.outer, UB_BUDGET // per_row)


def scatter_elems_args(spec: ScatterElemsSpec) -> list[str]:
    return [spec.x, spec.index, spec.out] if spec.value is not None else [spec.x, spec.index, spec.src, spec.out]


def _literal(spec: ScatterElemsSpec) -> str:
    assert spec.value is not None
    return repr(float(spec.value)) if spec.dtype in ("float32", "float16", "bfloat16") else repr(int(spec.value))


def scatter_elems_source(spec: ScatterElemsSpec, target: Target, block_dim: int | None = None) -> str:
    es, ies = DTYPE_SIZE[spec.dtype], DTYPE_SIZE[spec.index_dtype]
    dt, it = dsl_dtype(spec.dtype), dsl_dtype(spec.index_dtype)
    d, k, inner = spec.rows, spec.count, spec.inner
    rows_mode = row_tile(spec) >= 1
    units = spec.outer if rows_mode else spec.outer * k * inner
    blocks = max(1, min(block_dim or target.vector_cores, units))
    per = -(-units // blocks)
    blocks = -(-units // per)
    n = spec.name
    if rows_mode:
        tile = min(row_tile(spec), per)
        p, pi, ps = _ceil32(d * es), _ceil32(k * ies), _ceil32(k * es)
        sizes = (tile * p, tile * pi, tile * ps if spec.value is None else 32)
        load_src = "" if spec.value is not None else f'''
            DataCopyPad(sv, self.g_s[{spec.src_offset} + r * {k}], DataCopyExtParams(t, {k * es}, 0, 0, 0),
                        DataCopyPadExtParams(False, 0, 0, 0))'''
        put = _literal(spec) if spec.value is not None else f"sv.GetValue(q * {ps // es} + j)"
        body = f'''
        for r in range(self.u0, self.u1, {tile}):
            t = min({tile}, self.u1 - r)
            PipeBarrier(PIPE_ALL)
            DataCopyPad(xt, self.g_x[{spec.x_offset} + r * {d}], DataCopyExtParams(t, {d * es}, 0, 0, 0),
                        DataCopyPadExtParams(False, 0, 0, 0))
            DataCopyPad(ix, self.g_i[{spec.index_offset} + r * {k}], DataCopyExtParams(t, {k * ies}, 0, 0, 0),
                        DataCopyPadExtParams(False, 0, 0, 0)){load_src}
            PipeBarrier(PIPE_ALL)
            for q in range(t):
                for j in range({k}):
                    v = ix.GetValue(q * {pi // ies} + j)
                    if v < 0:
                        v = v + {d}
                    xt.SetValue(q * {p // es} + v, {put})
            PipeBarrier(PIPE_ALL)
            DataCopyPad(self.g_o[r * {d}], xt, DataCopyExtParams(t, {d * es}, 0, 0, 0))'''
    else:
        chunk = min(SCALAR_CHUNK, per)
        sizes = (32, _ceil32(chunk * ies), _ceil32(chunk * es) if spec.value is None else 32)
        load_src = "" if spec.value is not None else f'''
            DataCopyPad(sv, self.g_s[{spec.src_offset} + e], DataCopyExtParams(1, c * {es}, 0, 0, 0),
                        DataCopyPadExtParams(False, 0, 0, 0))'''
        put = _literal(spec) if spec.value is not None else "sv.GetValue(j)"
        body = f'''
        for e in range(self.u0, self.u1, {chunk}):
            c = min({chunk}, self.u1 - e)
            PipeBarrier(PIPE_ALL)
            DataCopyPad(ix, self.g_i[{spec.index_offset} + e], DataCopyExtParams(1, c * {ies}, 0, 0, 0),
                        DataCopyPadExtParams(False, 0, 0, 0)){load_src}
            PipeBarrier(PIPE_ALL)
            for j in range(c):
                u = e + j
                v = ix.GetValue(j)
                if v < 0:
                    v = v + {d}
                o = u // {k * inner}
                i = u % {inner}
                self.g_o.SetValue((o * {d} + v) * {inner} + i, {put})'''
    params = "x, idx, out" if spec.value is not None else "x, idx, src, out"
    src_global = "" if spec.value is not None else '''        self.g_s = GlobalTensor()
        self.g_s.SetGlobalBuffer(src)
'''
    return f'''{HEADER}
class Kernel_{n}:
    def Init(self, {params}):
        self.u0 = GetBlockIdx() * {per}
        self.u1 = min({units}, self.u0 + {per})
        self.g_x = GlobalTensor()
        self.g_x.SetGlobalBuffer(x)
        self.g_i = GlobalTensor()
        self.g_i.SetGlobalBuffer(idx)
{src_global}        self.g_o = GlobalTensor()
        self.g_o.SetGlobalBuffer(out)
        self.pipe = TPipe()
        self.bx = TBuf(TPosition.VECCALC)
        self.pipe.InitBuffer(self.bx, {sizes[0]})
        self.bi = TBuf(TPosition.VECCALC)
        self.pipe.InitBuffer(self.bi, {sizes[1]})
        self.bs = TBuf(TPosition.VECCALC)
        self.pipe.InitBuffer(self.bs, {sizes[2]})

    def Process(self):
        xt = self.bx.Get({dt})
        ix = self.bi.Get({it})
        sv = self.bs.Get({dt}){body}


@kernel
def {n}_kernel({params}):
    op = Kernel_{n}()
    op.Init({params})
    op.Process()


def {n}_launch({params}):
    {n}_kernel[{blocks}]({params})
'''
