"""Element scatters: out = x with out[o, idx[o, k, i], i] = src[o, k, i] (torch.scatter with a
src tensor, or with one value for every element), or combined with what is there (reduce 'add'
or 'multiply': scatter_'s reduce, scatter_add, scatter_reduce sum/prod with include_self). A
vector-core kernel in one of three modes. The vector unit has no scatter, so the scalar unit
places every element.

out and x are viewed as [O, D, I] (dense), idx and src as [O, K, I] (dense).

The indices are data, so they may repeat. torch's CPU kernel walks each line along the
indexed axis (o, i) in k order: the last write wins, and a reduction folds in k order. Two
blocks storing the same GM element plainly would be a race on a 910B (and a read-modify-write
from two blocks loses updates), so the tiled modes give every line one owner block:

- "rows" (I = 1, a scatter along the last axis, a row fits in UB): a tile of x rows, their
  index and src rows go to UB, the scalar unit writes each src value into its row slot
  (negative indices wrapped as Python does), and the rows go back to out whole. Every block
  owns its rows, so the result needs no copy beforehand.
- "columns" (I > 1, the D x w tile of a column stripe fits in UB): a block owns stripes of w
  columns of one o, loads x[o, :, stripe] (D strided rows), walks idx/src[o, :, stripe] in k
  order in chunks, and stores the stripe back. Blocks write disjoint stripes; no copy first.
- "scalar" (D too long for a stripe in UB; no reduce): out already holds x (a copy launch
  first); each src element is one scalar GM write (GlobalTensor.SetValue). Repeated indices
  in different blocks race here, so a reduction is refused in this mode.
"""

from __future__ import annotations

from dataclasses import dataclass

from sage.kernels.library.source import DTYPE_SIZE, HEADER, dsl_dtype
from sage.kernels.target import Target

UB_BUDGET = 160 * 1024
MAX_BURSTS = 4095          # DataCopyPad's blockCount limit: a longer stripe moves in pieces
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
    reduce: str | None = None   # None (store), "add" or "multiply": combined with out's element


# How a reduction combines the element already there with the scattered one (scalar code).
COMBINE = {None: "{new}", "add": "{old} + {new}", "multiply": "{old} * {new}"}


def _ceil32(n: int) -> int:
    return -(-n // 32) * 32


def row_tile(spec: ScatterElemsSpec) -> int:
    """Rows a "rows"-mode tile holds (0: that mode does not apply; out must then start as a copy of x)."""
    if spec.inner != 1:
        return 0
    es, ies = DTYPE_SIZE[spec.dtype], DTYPE_SIZE[spec.index_dtype]
    per_row = _ceil32(spec.rows * es) + _ceil32(spec.count * ies) + (_ceil32(spec.count * es) if spec.value is None else 0)
    return min(spec.outer, UB_BUDGET // per_row)


def column_width(spec: ScatterElemsSpec, cores: int) -> int:
    """Columns a "columns"-mode stripe holds (0: that mode does not apply). Stripes narrow
    enough to give every core a unit, as long as D rows and one index/src row fit in UB."""
    if spec.inner == 1:
        return 0
    es, ies = DTYPE_SIZE[spec.dtype], DTYPE_SIZE[spec.index_dtype]
    w = -(-spec.inner // max(1, min(spec.inner, -(-cores // spec.outer))))
    while w >= 1:
        if spec.rows * _ceil32(w * es) + _ceil32(w * ies) + _ceil32(w * es) <= UB_BUDGET:
            return w
        w //= 2
    return 0


def copies_x(spec: ScatterElemsSpec, cores: int) -> bool:
    """The kernel reads x itself (tiled modes); otherwise out must start as a copy of x."""
    return row_tile(spec) >= 1 or column_width(spec, cores) >= 1


def scatter_elems_args(spec: ScatterElemsSpec) -> list[str]:
    return [spec.x, spec.index, spec.out] if spec.value is not None else [spec.x, spec.index, spec.src, spec.out]


def _literal(spec: ScatterElemsSpec) -> str:
    assert spec.value is not None
    return repr(float(spec.value)) if spec.dtype in ("float32", "float16", "bfloat16") else repr(int(spec.value))


def _put(spec: ScatterElemsSpec, buf: str, pos: str, new: str) -> str:
    """The scalar store of one scattered element at UB `buf`[pos] (combined, under a reduce)."""
    return f"{buf}.SetValue({pos}, " + COMBINE[spec.reduce].format(old=f"{buf}.GetValue({pos})", new=new) + ")"


def _rows(spec: ScatterElemsSpec, per: int) -> tuple[tuple[int, int, int], str]:
    es, ies = DTYPE_SIZE[spec.dtype], DTYPE_SIZE[spec.index_dtype]
    d, k = spec.rows, spec.count
    tile = min(row_tile(spec), per)
    p, pi, ps = _ceil32(d * es), _ceil32(k * ies), _ceil32(k * es)
    sizes = (tile * p, tile * pi, tile * ps if spec.value is None else 32)
    load_src = "" if spec.value is not None else f'''
            DataCopyPad(sv, self.g_s[{spec.src_offset} + r * {k}], DataCopyExtParams(t, {k * es}, 0, 0, 0),
                        DataCopyPadExtParams(False, 0, 0, 0))'''
    new = _literal(spec) if spec.value is not None else f"sv.GetValue(q * {ps // es} + j)"
    return sizes, f'''
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
                    {_put(spec, "xt", f"q * {p // es} + v", new)}
            PipeBarrier(PIPE_ALL)
            DataCopyPad(self.g_o[r * {d}], xt, DataCopyExtParams(t, {d * es}, 0, 0, 0))'''


def _columns(spec: ScatterElemsSpec, w: int) -> tuple[tuple[int, int, int], str]:
    """Unit u = (o, stripe): x[o, :, c0:c0+wc] in UB at a fixed row pitch, idx/src rows of the
    stripe in chunks of kc, in k order; a narrower last stripe pads its UB rows to that pitch."""
    es, ies = DTYPE_SIZE[spec.dtype], DTYPE_SIZE[spec.index_dtype]
    d, k, inner = spec.rows, spec.count, spec.inner
    stripes = -(-inner // w)
    px, pi, ps = _ceil32(w * es), _ceil32(w * ies), _ceil32(w * es)
    per_k = pi + (ps if spec.value is None else 0)
    kc = max(1, min(k, MAX_BURSTS, (UB_BUDGET - d * px) // per_k))
    sizes = (d * px, kc * pi, kc * ps if spec.value is None else 32)
    gap = "(" + "{p} - (wc * {e} + 31) // 32 * 32) // 32"       # UB 32 B units a narrow row leaves
    load_src = "" if spec.value is not None else f'''
                DataCopyPad(sv, self.g_s[{spec.src_offset} + (o * {k} + k0) * {inner} + c0],
                            DataCopyExtParams(kn, wc * {es}, {inner} * {es} - wc * {es}, {gap.format(p=ps, e=es)}, 0),
                            DataCopyPadExtParams(False, 0, 0, 0))'''
    new = _literal(spec) if spec.value is not None else f"sv.GetValue(q * {ps // es} + c)"
    return sizes, f'''
        for u in range(self.u0, self.u1):
            o = u // {stripes}
            c0 = (u % {stripes}) * {w}
            wc = min({w}, {inner} - c0)
            PipeBarrier(PIPE_ALL)
            for r0 in range(0, {d}, {MAX_BURSTS}):
                DataCopyPad(xt[r0 * {px // es}], self.g_x[{spec.x_offset} + (o * {d} + r0) * {inner} + c0],
                            DataCopyExtParams(min({MAX_BURSTS}, {d} - r0), wc * {es}, {inner} * {es} - wc * {es},
                                              {gap.format(p=px, e=es)}, 0),
                            DataCopyPadExtParams(False, 0, 0, 0))
            for k0 in range(0, {k}, {kc}):
                kn = min({kc}, {k} - k0)
                PipeBarrier(PIPE_ALL)
                DataCopyPad(ix, self.g_i[{spec.index_offset} + (o * {k} + k0) * {inner} + c0],
                            DataCopyExtParams(kn, wc * {ies}, {inner} * {ies} - wc * {ies}, {gap.format(p=pi, e=ies)}, 0),
                            DataCopyPadExtParams(False, 0, 0, 0)){load_src}
                PipeBarrier(PIPE_ALL)
                for q in range(kn):
                    for c in range(wc):
                        v = ix.GetValue(q * {pi // ies} + c)
                        if v < 0:
                            v = v + {d}
                        {_put(spec, "xt", f"v * {px // es} + c", new)}
            PipeBarrier(PIPE_ALL)
            for r0 in range(0, {d}, {MAX_BURSTS}):
                DataCopyPad(self.g_o[(o * {d} + r0) * {inner} + c0], xt[r0 * {px // es}],
                            DataCopyExtParams(min({MAX_BURSTS}, {d} - r0), wc * {es}, {gap.format(p=px, e=es)},
                                              {inner} * {es} - wc * {es}, 0))'''


def _scalar(spec: ScatterElemsSpec, per: int) -> tuple[tuple[int, int, int], str]:
    if spec.reduce is not None:
        raise ValueError(f"a scatter reduce ({spec.reduce}) whose {spec.rows}-long indexed axis does not fit "
                         "a column stripe in UB (element by element, blocks would race on repeated indices)")
    es, ies = DTYPE_SIZE[spec.dtype], DTYPE_SIZE[spec.index_dtype]
    d, k, inner = spec.rows, spec.count, spec.inner
    chunk = min(SCALAR_CHUNK, per)
    sizes = (32, _ceil32(chunk * ies), _ceil32(chunk * es) if spec.value is None else 32)
    load_src = "" if spec.value is not None else f'''
            DataCopyPad(sv, self.g_s[{spec.src_offset} + e], DataCopyExtParams(1, c * {es}, 0, 0, 0),
                        DataCopyPadExtParams(False, 0, 0, 0))'''
    put = _literal(spec) if spec.value is not None else "sv.GetValue(j)"
    return sizes, f'''
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


def scatter_elems_source(spec: ScatterElemsSpec, target: Target, block_dim: int | None = None) -> str:
    if spec.reduce not in COMBINE:
        raise ValueError(f"scatter reduce {spec.reduce!r} (written: {sorted(str(r) for r in COMBINE)})")
    dt, it = dsl_dtype(spec.dtype), dsl_dtype(spec.index_dtype)
    cores = block_dim or target.vector_cores
    w = column_width(spec, cores)
    if row_tile(spec) >= 1:
        units = spec.outer
    elif w:
        units = spec.outer * -(-spec.inner // w)
    else:
        units = spec.outer * spec.count * spec.inner
    blocks = max(1, min(cores, units))
    per = -(-units // blocks)
    blocks = -(-units // per)
    n = spec.name
    if row_tile(spec) >= 1:
        sizes, body = _rows(spec, per)
    elif w:
        sizes, body = _columns(spec, w)
    else:
        sizes, body = _scalar(spec, per)
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
