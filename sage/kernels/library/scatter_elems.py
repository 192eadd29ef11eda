"""Element scatters: out = x with out[o, idx[o, k, i], i] = src[o, k, i] (torch.scatter with a
src tensor, or with one value for every element), or combined with what is there (reduce 'add'
or 'multiply': scatter_'s reduce, scatter_add, scatter_reduce sum/prod with include_self). A
vector-core kernel in one of two modes. The vector unit has no scatter, so the scalar unit
places every element.

out and x are viewed as [O, D, I] (dense). idx and src are [O, K, I] (dense) by default; torch
also lets index be smaller than self on every axis off the scattered one and src be larger
than index on every axis (only index's extent is read: aten/src/ATen/native/ScatterGatherChecks.h).
For that the spec carries the geometry itself (`lead`, `axis`, `width`): the index's axes other
than the scattered one and the last, each with its extent and its stride in out, idx and src.

The indices are data, so they may repeat. torch's CPU kernel walks each line along the
indexed axis (o, i) in k order: the last write wins, and a reduction folds in k order. Two
blocks storing the same GM element plainly would be a race on a 910B (and a read-modify-write
from two blocks loses updates), so every line has one owner block:

- "rows" (I = 1, a scatter along the last axis, a row fits in UB): a tile of x rows, their
  index and src rows go to UB, the scalar unit writes each src value into its row slot
  (negative indices wrapped as Python does), and the rows go back to out whole. Tiles stay
  inside the last lead axis, whose rows are evenly spaced in every tensor.
- "columns" (I > 1): a block owns stripes of w columns of one lead position and a band of
  the D rows: loads x[o, band, stripe] (strided rows), walks idx/src[o, :, stripe] in k order
  in chunks, places the indices that fall in its band and stores the band back. A D too long
  for UB is cut in bands, each walking every index (read once per band), so a reduce never
  needs two blocks on one element.

Blocks write disjoint parts of out. When index covers all of out (`covers`) they write all of
it and out needs no copy first; otherwise the lowering copies x to out before the scatter.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from sage.kernels.library.source import DTYPE_SIZE, HEADER, dsl_dtype
from sage.kernels.target import Target

UB_BUDGET = 160 * 1024
MAX_BURSTS = 4095          # DataCopyPad's blockCount limit: a longer band moves in pieces
MIN_K_ROWS = 8             # index/src rows a band leaves room for at least


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
    # An index smaller than out (see the module doc); empty: idx and src are [O, K, I].
    lead: tuple[tuple[int, int, int, int], ...] = ()   # (index extent, out, idx, src strides), outermost first
    axis: tuple[int, ...] = ()  # strides along the scattered axis: out, idx, src
    width: int = 0             # the index's extent on the last axis (I > 1): the span of the stripes
    covers: bool = True        # the index spans out on every axis off the scattered one
    wide: bool = False         # fp16/bf16 reduce: combine in a float32 copy of the tile, round once


# How a reduction combines the element already there with the scattered one (scalar code).
COMBINE = {None: "{new}", "add": "{old} + {new}", "multiply": "{old} * {new}"}


def _ceil32(n: int) -> int:
    return -(-n // 32) * 32


def xbytes(spec: ScatterElemsSpec, nbytes: int) -> int:
    """UB bytes of an x tile of `nbytes`, with its float32 copy when the spec is wide."""
    return nbytes + (nbytes // DTYPE_SIZE[spec.dtype] * 4 if spec.wide else 0)


def widen(spec: ScatterElemsSpec, n: str) -> str:
    """After an x tile of n elements is in UB: its float32 copy, which the scalar unit combines into."""
    return f"\n            Cast(xf, xt, RoundMode.CAST_NONE, {n})\n            PipeBarrier(PIPE_ALL)" if spec.wide else ""


def narrow(spec: ScatterElemsSpec, n: str) -> str:
    """Before the tile goes back: the float32 sums rounded once (to nearest even) into it."""
    return f"\n            Cast(xt, xf, RoundMode.CAST_RINT, {n})\n            PipeBarrier(PIPE_ALL)" if spec.wide else ""


def acc(spec: ScatterElemsSpec) -> str:
    return "xf" if spec.wide else "xt"


def geometry(spec: ScatterElemsSpec) -> tuple[tuple[tuple[int, int, int, int], ...], tuple[int, ...], int]:
    """(lead axes, strides along the scattered axis, column span): the spec's own, or the
    [O, K, I] views' (rows mode: the O rows; columns mode: O lead positions of I columns)."""
    if spec.lead:
        return spec.lead, spec.axis, spec.width
    d, k, i = spec.rows, spec.count, spec.inner
    return ((spec.outer, d * i, k * i, k * i),), (i, i, i), i


def row_tile(spec: ScatterElemsSpec) -> int:
    """Rows a "rows"-mode tile holds (0: that mode does not apply)."""
    if spec.inner != 1:
        return 0
    es, ies = DTYPE_SIZE[spec.dtype], DTYPE_SIZE[spec.index_dtype]
    per_row = (xbytes(spec, _ceil32(spec.rows * es)) + _ceil32(spec.count * ies)
               + (_ceil32(spec.count * es) if spec.value is None else 0))
    return min(geometry(spec)[0][-1][0], UB_BUDGET // per_row)


def _per_k(spec: ScatterElemsSpec, w: int) -> int:
    es, ies = DTYPE_SIZE[spec.dtype], DTYPE_SIZE[spec.index_dtype]
    return _ceil32(w * ies) + (_ceil32(w * es) if spec.value is None else 0)


def column_plan(spec: ScatterElemsSpec, cores: int) -> tuple[int, int]:
    """(columns a stripe holds, rows a band holds) for the "columns" mode (also a scatter along
    the last axis whose row does not fit UB: a stripe of one column). Stripes narrow enough
    to give every core a unit while D rows and one index/src row fit in UB; if even a 32 B
    stripe of D rows does not, the rows come in bands."""
    es = DTYPE_SIZE[spec.dtype]
    lead, _, span = geometry(spec)
    positions = math.prod(e for e, *_ in lead)
    w = -(-span // max(1, min(span, -(-cores // positions))))
    while w >= 1:
        if spec.rows * xbytes(spec, _ceil32(w * es)) + _per_k(spec, w) <= UB_BUDGET:
            return w, spec.rows
        w //= 2
    w = min(span, 32 // es)                    # one 32 B block of columns costs what one column does
    return w, (UB_BUDGET - MIN_K_ROWS * _per_k(spec, w)) // xbytes(spec, _ceil32(w * es))


def copies_x(spec: ScatterElemsSpec, cores: int) -> bool:
    """The kernel writes every element of out (from x where nothing lands): no copy first."""
    return spec.covers


def scatter_elems_args(spec: ScatterElemsSpec) -> list[str]:
    return [spec.x, spec.index, spec.out] if spec.value is not None else [spec.x, spec.index, spec.src, spec.out]


def _literal(spec: ScatterElemsSpec) -> str:
    assert spec.value is not None
    return repr(float(spec.value)) if spec.dtype in ("float32", "float16", "bfloat16") else repr(int(spec.value))


def _put(spec: ScatterElemsSpec, buf: str, pos: str, new: str) -> str:
    """The scalar store of one scattered element at UB `buf`[pos] (combined, under a reduce)."""
    return f"{buf}.SetValue({pos}, " + COMBINE[spec.reduce].format(old=f"{buf}.GetValue({pos})", new=new) + ")"


def _offsets(lead: tuple[tuple[int, int, int, int], ...], m: str) -> tuple[str, str, str]:
    """Out, idx and src element offsets of lead position `m` (row-major over the lead axes)."""
    if not lead:
        return "0", "0", "0"
    terms: list[list[str]] = [[], [], []]
    after = 1
    for j in range(len(lead) - 1, -1, -1):
        ext, *strides = lead[j]
        digit = m if j == len(lead) - 1 else f"({m} // {after})"
        if j:
            digit = f"({digit} % {ext})"
        for t, s in zip(terms, strides):
            t.append(f"{digit} * {s}")
        after = after * ext
    return tuple(" + ".join(t) for t in terms)    # type: ignore[return-value]


def _rows(spec: ScatterElemsSpec, cores: int) -> tuple[int, tuple[int, int, int], str]:
    es, ies = DTYPE_SIZE[spec.dtype], DTYPE_SIZE[spec.index_dtype]
    d, k = spec.rows, spec.count
    lead, _, _ = geometry(spec)
    (last, so, si, ss), rest = lead[-1], lead[:-1]
    positions = math.prod(e for e, *_ in rest)
    tile = min(row_tile(spec), -(-last // max(1, -(-cores // positions))))
    chunks = -(-last // tile)
    p, pi, ps = _ceil32(d * es), _ceil32(k * ies), _ceil32(k * es)
    sizes = (tile * p, tile * pi, tile * ps if spec.value is None else 32)
    off_o, off_i, off_s = _offsets(rest, "m")
    load_src = "" if spec.value is not None else f'''
            DataCopyPad(sv, self.g_s[{spec.src_offset} + {off_s} + r * {ss}],
                        DataCopyExtParams(t, {k * es}, {ss * es - k * es}, 0, 0), DataCopyPadExtParams(False, 0, 0, 0))'''
    new = _literal(spec) if spec.value is not None else f"sv.GetValue(q * {ps // es} + j)"
    return positions * chunks, sizes, f'''
        for u in range(self.u0, self.u1):
            m = u // {chunks}
            r = (u % {chunks}) * {tile}
            t = min({tile}, {last} - r)
            PipeBarrier(PIPE_ALL)
            DataCopyPad(xt, self.g_x[{spec.x_offset} + {off_o} + r * {so}], DataCopyExtParams(t, {d * es}, {so * es - d * es}, 0, 0),
                        DataCopyPadExtParams(False, 0, 0, 0))
            DataCopyPad(ix, self.g_i[{spec.index_offset} + {off_i} + r * {si}],
                        DataCopyExtParams(t, {k * ies}, {si * ies - k * ies}, 0, 0), DataCopyPadExtParams(False, 0, 0, 0)){load_src}
            PipeBarrier(PIPE_ALL){widen(spec, f"t * {p // es}")}
            for q in range(t):
                for j in range({k}):
                    v = ix.GetValue(q * {pi // ies} + j)
                    if v < 0:
                        v = v + {d}
                    {_put(spec, acc(spec), f"q * {p // es} + v", new)}
            PipeBarrier(PIPE_ALL){narrow(spec, f"t * {p // es}")}
            DataCopyPad(self.g_o[{off_o} + r * {so}], xt, DataCopyExtParams(t, {d * es}, 0, {so * es - d * es}, 0))'''


def _columns(spec: ScatterElemsSpec, cores: int) -> tuple[int, tuple[int, int, int], str]:
    """Unit u = (lead position, stripe, band): x[m, band, c0:c0+wc] in UB at a fixed row pitch,
    idx/src rows of the stripe in chunks of kc, in k order; a narrower last stripe pads its UB
    rows to that pitch."""
    es, ies = DTYPE_SIZE[spec.dtype], DTYPE_SIZE[spec.index_dtype]
    d, k = spec.rows, spec.count
    lead, (ao, ai, as_), span = geometry(spec)
    w, band = column_plan(spec, cores)
    if band < 1:
        raise ValueError(f"no {w}-column stripe of a {d}-row scatter fits in UB")
    stripes, bands = -(-span // w), -(-d // band)
    positions = math.prod(e for e, *_ in lead)
    px, pi, ps = _ceil32(w * es), _ceil32(w * ies), _ceil32(w * es)
    kc = max(1, min(k, MAX_BURSTS, (UB_BUDGET - band * xbytes(spec, px)) // _per_k(spec, w)))
    sizes = (band * px, kc * pi, kc * ps if spec.value is None else 32)
    gap = "(" + "{p} - (wc * {e} + 31) // 32 * 32) // 32"       # UB 32 B units a narrow row leaves
    off_o, off_i, off_s = _offsets(lead, "m")
    load_src = "" if spec.value is not None else f'''
                DataCopyPad(sv, self.g_s[{spec.src_offset} + {off_s} + k0 * {as_} + c0],
                            DataCopyExtParams(kn, wc * {es}, {as_} * {es} - wc * {es}, {gap.format(p=ps, e=es)}, 0),
                            DataCopyPadExtParams(False, 0, 0, 0))'''
    new = _literal(spec) if spec.value is not None else f"sv.GetValue(q * {ps // es} + c)"
    # one band: every index lands in it, no test needed
    place = (f"{_put(spec, acc(spec), f'v * {px // es} + c', new)}" if bands == 1 else
             f"if v >= b0 and v < b0 + bn:\n                            "
             f"{_put(spec, acc(spec), f'(v - b0) * {px // es} + c', new)}")
    return positions * stripes * bands, sizes, f'''
        for u in range(self.u0, self.u1):
            m = u // {stripes * bands}
            c0 = (u // {bands} % {stripes}) * {w}
            b0 = (u % {bands}) * {band}
            bn = min({band}, {d} - b0)
            wc = min({w}, {span} - c0)
            PipeBarrier(PIPE_ALL)
            for r0 in range(0, bn, {MAX_BURSTS}):
                DataCopyPad(xt[r0 * {px // es}], self.g_x[{spec.x_offset} + {off_o} + (b0 + r0) * {ao} + c0],
                            DataCopyExtParams(min({MAX_BURSTS}, bn - r0), wc * {es}, {ao} * {es} - wc * {es},
                                              {gap.format(p=px, e=es)}, 0),
                            DataCopyPadExtParams(False, 0, 0, 0))
            PipeBarrier(PIPE_ALL){widen(spec, f"bn * {px // es}")}
            for k0 in range(0, {k}, {kc}):
                kn = min({kc}, {k} - k0)
                PipeBarrier(PIPE_ALL)
                DataCopyPad(ix, self.g_i[{spec.index_offset} + {off_i} + k0 * {ai} + c0],
                            DataCopyExtParams(kn, wc * {ies}, {ai} * {ies} - wc * {ies}, {gap.format(p=pi, e=ies)}, 0),
                            DataCopyPadExtParams(False, 0, 0, 0)){load_src}
                PipeBarrier(PIPE_ALL)
                for q in range(kn):
                    for c in range(wc):
                        v = ix.GetValue(q * {pi // ies} + c)
                        if v < 0:
                            v = v + {d}
                        {place}
            PipeBarrier(PIPE_ALL){narrow(spec, f"bn * {px // es}")}
            for r0 in range(0, bn, {MAX_BURSTS}):
                DataCopyPad(self.g_o[{off_o} + (b0 + r0) * {ao} + c0], xt[r0 * {px // es}],
                            DataCopyExtParams(min({MAX_BURSTS}, bn - r0), wc * {es}, {gap.format(p=px, e=es)},
                                              {ao} * {es} - wc * {es}, 0))'''


def scatter_elems_source(spec: ScatterElemsSpec, target: Target, block_dim: int | None = None) -> str:
    if spec.reduce not in COMBINE:
        raise ValueError(f"scatter reduce {spec.reduce!r} (written: {sorted(str(r) for r in COMBINE)})")
    dt, it = dsl_dtype(spec.dtype), dsl_dtype(spec.index_dtype)
    cores = block_dim or target.vector_cores
    from sage.kernels.library.scatter_row_chunks import index_chunk, row_chunks
    if row_tile(spec) >= 1:
        units, sizes, body = _rows(spec, cores)
    elif index_chunk(spec) >= 1:             # a row in UB, its index/src row in chunks
        units, sizes, body = row_chunks(spec)
    else:
        units, sizes, body = _columns(spec, cores)
    blocks = max(1, min(cores, units))
    per = -(-units // blocks)
    blocks = -(-units // per)
    n = spec.name
    wide_buffer = f"\n        self.bf = TBuf(TPosition.VECCALC)\n        self.pipe.InitBuffer(self.bf, {sizes[0] // DTYPE_SIZE[spec.dtype] * 4})" if spec.wide else ""
    wide_get = "\n        xf = self.bf.Get(float32)" if spec.wide else ""
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
        self.pipe.InitBuffer(self.bs, {sizes[2]}){wide_buffer}

    def Process(self):
        xt = self.bx.Get({dt})
        ix = self.bi.Get({it})
        sv = self.bs.Get({dt}){wide_get}{body}


@kernel
def {n}_kernel({params}):
    op = Kernel_{n}()
    op.Init({params})
    op.Process()


def {n}_launch({params}):
    {n}_kernel[{blocks}]({params})
'''
