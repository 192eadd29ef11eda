"""Element gathers along an axis other than the last: out[o, k, i] = x[o, idx[o, k, i], i]
(torch.gather, take_along_dim) with vector `Gather`s over column stripes instead of one scalar
GM read per element (which, at 2048 x 4096 indices, is millions of instruction records).

x is viewed as [O, D, I], idx and out as [O, K, I] (dense). A unit is (o, stripe of w columns):
x[o, :, stripe] goes to UB as D rows of pe elements (pe: w rounded up to 32 B), the index rows
of the stripe come in chunks of kc rows at the same pitch, and the vector unit turns each index
v (wrapped as Python does: + D when < 0) into the byte offset v * row + column * es of its
element in the stripe; one Gather per chunk picks kn * pe elements, stored back as kn rows.

A D too long for a stripe in UB comes in bands of rows. UB holds the band and, right after
it, the chunk's picks so far; an index outside the band points at its own pick (so the Gather
keeps it), one inside at its element of the band. Every index lies in exactly one band, so
after the last band every pick is x's element. All offset arithmetic is int32 vector work.
"""

from __future__ import annotations

from sage.kernels.library import gather_elems
from sage.kernels.library.gather_elems import GATHER_DTYPES, GatherElemsSpec, launcher
from sage.kernels.library.source import DTYPE_SIZE, HEADER, bind_globals, dsl_dtype
from sage.kernels.target import Target

MAX_BURSTS = 4095          # DataCopyPad's blockCount limit: a longer band moves in pieces
MIN_K_ROWS = 16            # index rows a chunk holds at least when the rows come in bands


def _ceil(n: int, m: int) -> int:
    return -(-n // m) * m


def column_plan(spec: GatherElemsSpec, cores: int) -> tuple[int, int, int, int]:
    """(w columns, pe pitch in elements, band rows, kc index rows), or all 0: not this mode.

    Stripes start one 32 B block wide (narrower costs the same) and widen while every core
    still gets a unit and D rows still fit UB whole (a short axis gathered from long rows,
    level1/20 case 27's 2 rows of 2 M columns, takes stripes of thousands of columns).
    Otherwise the rows come in equal bands of about half of UB, the other half for index
    chunks: the instructions grow with stripes x chunks x bands, and this keeps both factors
    small (level1/20 case 24, 8192 rows of 4096 indices: about 1.4 M records against the cap
    of 2.5 M)."""
    es, ies = DTYPE_SIZE[spec.dtype], DTYPE_SIZE[spec.index_dtype]
    if spec.inner == 1 or spec.dtype not in GATHER_DTYPES or es not in (2, 4):
        return 0, 0, 0, 0
    budget = gather_elems.UB_BUDGET

    def whole(w: int) -> int:                             # UB bytes with all D rows and MIN_K_ROWS index rows
        pe = _ceil(w, 32 // es)
        return spec.rows * pe * es + min(spec.count, MIN_K_ROWS) * pe * (2 * es + ies + 24)

    w = min(spec.inner, 32 // es)
    while (w * 2 <= spec.inner and spec.outer * -(-spec.inner // (w * 2)) >= cores
           and whole(w * 2) <= budget):
        w *= 2
    pe = _ceil(w, 32 // es)
    px = pe * es
    per_k = pe * (es + ies + 24)                          # a pick, an index and six int32 work rows
    if whole(w) <= budget:
        band = spec.rows
        kc = (budget - band * px) // per_k
    else:
        bands = -(-spec.rows * px // (budget // 2))
        band = -(-spec.rows // bands)
        kc = (budget - band * px) // (per_k + px)         # and each pick's place behind the band
    return w, pe, band, max(1, min(kc, spec.count, MAX_BURSTS))


def gather_columns_source(spec: GatherElemsSpec, target: Target, block_dim: int | None = None) -> str:
    es, ies = DTYPE_SIZE[spec.dtype], DTYPE_SIZE[spec.index_dtype]
    dt, it = dsl_dtype(spec.dtype), dsl_dtype(spec.index_dtype)
    d, k, inner = spec.rows, spec.count, spec.inner
    w, pe, band, kc = column_plan(spec, block_dim or target.vector_cores)
    if band < 1:
        raise ValueError(f"no stripe of a {d}-row gather fits in UB")
    px, pi = pe * es, pe * ies
    stripes, bands = -(-inner // w), -(-d // band)
    units = spec.outer * stripes
    per, _, tail = launcher(spec.name, units, target, block_dim)
    n = spec.name
    gap = "(" + "{p} - (wc * {e} + 31) // 32 * 32) // 32"       # UB 32 B units a narrow row leaves
    to_int32 = "Cast(off, ix, RoundMode.CAST_NONE, m)" if ies == 8 else "Adds(off, ix, 0, m)"
    band_lines = [
        f"for r0 in range(0, bn, {MAX_BURSTS}):",
        f"    DataCopyPad(xa[r0 * {pe}], self.g_x[{spec.x_offset} + (o * {d} + b0 + r0) * {inner} + c0],",
        f"                DataCopyExtParams(min({MAX_BURSTS}, bn - r0), wc * {es}, {inner} * {es} - wc * {es},",
        f"                                  {gap.format(p=px, e=es)}, 0),",
        "                DataCopyPadExtParams(False, 0, 0, 0))",
        "SetFlag(HardEvent.MTE2_V, 0)",
        "WaitFlag(HardEvent.MTE2_V, 0)"]

    def load_band(indent: int) -> str:
        return "".join("\n" + " " * indent + line for line in band_lines)

    if bands == 1:
        picks = f'''
            b0 = 0
            bn = {d}
            PipeBarrier(PIPE_ALL){load_band(12)}
            for k0 in range(0, {k}, {kc}):
                kn = min({kc}, {k} - k0)
                m = kn * {pe}
                self.LoadIndex(ix, o, k0, kn, c0, wc)
                Muls(off, off, {px}, m)
                Add(off, off, ramp, m)
                Gather(ot, xa, off, 0, m)
                self.Store(ot, o, k0, kn, c0, wc)'''
    else:
        picks = f'''
            for k0 in range(0, {k}, {kc}):
                kn = min({kc}, {k} - k0)
                m = kn * {pe}
                self.LoadIndex(ix, o, k0, kn, c0, wc)
                for b0 in range(0, {d}, {band}):
                    bn = min({band}, {d} - b0)
                    PipeBarrier(PIPE_ALL){load_band(20)}
                    Adds(lo, off, 1 - b0, m)
                    Mins(lo, lo, 1, m)
                    Maxs(lo, lo, 0, m)
                    Muls(hi, off, -1, m)
                    Adds(hi, hi, b0 + bn, m)
                    Mins(hi, hi, 1, m)
                    Maxs(hi, hi, 0, m)
                    Mul(lo, lo, hi, m)
                    Adds(hi, off, -b0, m)
                    Muls(hi, hi, {px}, m)
                    Add(hi, hi, ramp, m)
                    Sub(hi, hi, own, m)
                    Mul(hi, hi, lo, m)
                    Add(hi, hi, own, m)
                    Gather(ot, xa, hi, 0, m)
                    DataCopy(xa[{band * pe}], ot, m)
                self.Store(ot, o, k0, kn, c0, wc)'''
    xa_bytes = band * px + (kc * px if bands > 1 else 0)
    return f'''{HEADER}
class Kernel_{n}:
    def Init(self, x, idx, out):
        self.u0 = GetBlockIdx() * {per}
        self.u1 = min({units}, self.u0 + {per})
{bind_globals(x="x", i="idx", o="out")}
        self.pipe = TPipe()
        self.bx = TBuf(TPosition.VECCALC)
        self.pipe.InitBuffer(self.bx, {xa_bytes})
        self.bo = TBuf(TPosition.VECCALC)
        self.pipe.InitBuffer(self.bo, {kc * px})
        self.bi = TBuf(TPosition.VECCALC)
        self.pipe.InitBuffer(self.bi, {kc * pi})
        self.bw = TBuf(TPosition.VECCALC)
        self.pipe.InitBuffer(self.bw, {kc * pe * 4 * 6})

    def LoadIndex(self, ix, o, k0, kn, c0, wc):
        """Index rows k0 .. k0 + kn of the stripe as int32 row numbers in [0, D) in `off`."""
        PipeBarrier(PIPE_ALL)
        DataCopyPad(ix, self.g_i[{spec.index_offset} + (o * {k} + k0) * {inner} + c0],
                    DataCopyExtParams(kn, wc * {ies}, {inner} * {ies} - wc * {ies}, {gap.format(p=pi, e=ies)}, 0),
                    DataCopyPadExtParams(False, 0, 0, 0))
        SetFlag(HardEvent.MTE2_V, 0)
        WaitFlag(HardEvent.MTE2_V, 0)
        m = kn * {pe}
        off = self.bw.Get(int32)
        neg = off[{kc * pe}]
        {to_int32}
        Mins(neg, off, 0, m)
        Maxs(neg, neg, -1, m)
        Muls(neg, neg, {-d}, m)
        Add(off, off, neg, m)
        Mins(off, off, {d - 1}, m)
        Maxs(off, off, 0, m)      # the pad columns of a narrow stripe hold no index: kept in bounds

    def Store(self, ot, o, k0, kn, c0, wc):
        SetFlag(HardEvent.V_MTE3, 0)
        WaitFlag(HardEvent.V_MTE3, 0)
        DataCopyPad(self.g_o[(o * {k} + k0) * {inner} + c0], ot,
                    DataCopyExtParams(kn, wc * {es}, {gap.format(p=px, e=es)}, {inner} * {es} - wc * {es}, 0))

    def Process(self):
        xa = self.bx.Get({dt})
        ot = self.bo.Get({dt})
        ix = self.bi.Get({it})
        work = self.bw.Get(int32)
        off = work
        lo = work[{2 * kc * pe}]
        hi = work[{3 * kc * pe}]
        ramp = work[{4 * kc * pe}]
        own = work[{5 * kc * pe}]
        # the byte column of every position (c * es) and, banded, the byte address of its own pick
        for c in range({pe}):
            ramp.SetValue(c, c * {es})
        SetFlag(HardEvent.S_V, 0)
        WaitFlag(HardEvent.S_V, 0)
        for r in range(1, {kc}):
            DataCopy(ramp[r * {pe}], ramp, {pe})
{_own(bands, kc, pe, band * px, es)}        for u in range(self.u0, self.u1):
            o = u // {stripes}
            c0 = (u % {stripes}) * {w}
            wc = min({w}, {inner} - c0){picks}
{tail}'''


def _own(bands: int, kc: int, pe: int, base: int, es: int) -> str:
    """Banded: own[j] = the byte address of pick j behind the band (base + j * es)."""
    if bands == 1:
        return ""
    return f'''        for r in range({kc}):
            Adds(own[r * {pe}], ramp[r * {pe}], {base} + r * {pe * es}, {pe})
'''
