"""The kernel text of conv_gemm.py: the AIV prologue class (the AIC's is conv_gemm_aic.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sage.kernels.library.source import DTYPE_SIZE, dsl_dtype
from sage.kernels.library.conv_flags import FLAG_AIV, FLAG_READY, FLAG_WEIGHTS

if TYPE_CHECKING:
    from sage.kernels.library.conv_gemm import ConvSpec, Geometry


def _ceil(n: int, unit: int) -> int:
    return -(-n // unit) * unit


def indent(text: str, by: int = 4) -> str:
    return "\n".join(" " * by + line if line.strip() else line for line in text.split("\n"))


def _ramp(buf: str, count: int, start: str, step: int, ind: str) -> str:
    """int32 buf[k] = start + k*step for k < count: 8 scalar stores, then doubling Adds."""
    lines = [f"for k in range(8):", f"    {buf}.SetValue(k, {start} + k * {step})",
             "SetFlag(HardEvent.S_V, 2)", "WaitFlag(HardEvent.S_V, 2)", "ln = 8",
             f"while ln < {count}:", f"    Adds({buf}[ln], {buf}, ln * {step}, min(ln, {count} - ln))", "    ln = ln * 2"]
    return "\n".join(ind + s for s in lines)


def aiv_text(spec: ConvSpec, g: Geometry) -> str:
    es, dt, n = DTYPE_SIZE[spec.dtype], dsl_dtype(spec.dtype), spec.name
    (d, h, w), (sh, sw), (pd, ph, pw) = spec.size, spec.stride[1:], spec.padding
    kk = len(g.taps)
    unit = 32 // es
    lead = _ceil(pw, unit)
    rs = g.rr * sh                                  # staged rows per unit
    cout = spec.cout
    kko = spec.kernel[0] * spec.kernel[1] * spec.kernel[2]      # taps of W itself
    kw = spec.kernel[2]
    nv = len(g.variants)
    kkp = kk * g.kp                                 # a weight row of Wt: taps x channels padded to 16
    row_w = spec.cin * kko
    # staged weight row pitch: zeros past Cin * KK, as far as the padded k of Wt reach
    sp = _ceil(max(kkp, row_w + kko, ((g.kp - 1) // kw + 1) * kko), unit)
    w_gap = (sp * es - _ceil(row_w * es, 32)) // 32
    w_fill = (_ceil(row_w * es, 32) - row_w * es) // es
    w_pad = f"DataCopyPadExtParams(True, 0, {w_fill}, 0)" if w_fill else "DataCopyPadExtParams(False, 0, 0, 0)"
    chunk = g.rr * g.wq
    # row r of a table = row 0 + r rows of the staging, built by doubling (log2(rr) Adds)
    rows_fill = "\n".join(
        f"        ln = 1\n        while ln < {g.rr}:\n"
        f"            Adds(self.offs[{q}][ln * {g.wq}], self.offs[{q}], ln * {sh * g.ws * es}, min(ln, {g.rr} - ln) * {g.wq})\n"
        f"            ln = ln * 2" for q in range(nv))
    # one ramp, the other column variants offset from it
    ramps = _ramp("self.offs[0]", g.wq, str((lead + g.variants[0] - pw) * es), sw * es, "        ") + "".join(
        f"\n        Adds(self.offs[{q}], self.offs[0], {(start - g.variants[0]) * es}, {g.wq})"
        for q, start in enumerate(g.variants) if q)
    if g.unroll:      # row 0 of the weight offsets: k = ci * kw + j -> W's (ci, tap j); others zero
        # W's flat index of k is ci * KK + j = k + (k // kw) * (KK - kw): k // kw by a float
        # floor (exact for these small k), all on the vector unit
        w_row0 = _ramp("offs", g.kp, "0", 1, "        ") + f"""
        wf = self.wtf.Get(float32)
        wq = self.wtq.Get(int32)
        Cast(wf, offs, RoundMode.CAST_NONE, {g.kp})
        Muls(wf, wf, {1.0 / kw!r}, {g.kp})
        Adds(wf, wf, {0.5 / kw!r}, {g.kp})
        Cast(wq, wf, RoundMode.CAST_FLOOR, {g.kp})
        Muls(wq, wq, {kko - kw}, {g.kp})
        Add(offs, offs, wq, {g.kp})
        Muls(offs, offs, {es}, {g.kp})"""
    else:             # k = ci: a ramp of step KK
        w_row0 = _ramp("offs", g.kp, "0", kko * es, "        ")
    w_step = kw if g.unroll else 1                  # W's flat tap index of Wt's tap t, over t
    copy_w = f"DataCopyExtParams(hi - lo, {w * es}, 0, {(g.ws * es - _ceil(w * es, 32)) // 32}, 0)"
    fill = (_ceil(w * es, 32) - w * es) // es
    pad_w = f"DataCopyPadExtParams(True, 0, {fill}, 0)" if fill else "DataCopyPadExtParams(False, 0, 0, 0)"
    # plane p of a (b, ci): (row phase, column phase), or unrolled (column tap j, row phase)
    variant, row_phase = (f"p // {sh}", f"p % {sh}") if g.unroll else (f"p % {nv}", f"p // {nv}")
    na = -(-g.hq // g.rr)
    ppc = g.pp                                      # channels (planes) per unit in 1-D, else 1
    head = f"""            b = u // (ncg * {g.dp * na})
            cg = u // {g.dp * na} % ncg
            dpi = u // {na} % {g.dp}
            a0 = u % {na} * {g.rr}
            plane = b * {spec.cin} + c_lo + cg * {ppc}"""
    if g.pp > 1:      # 1-D: a unit is pp whole planes of one row each (consecutive rows of x)
        decode = head + f"""
            ra = min({g.pp}, nc - cg * {ppc})
            dz, hr0, lo, hi = 0, 0, 0, ra"""
        store = (f"                for p in range({g.phases}):\n"
                 f"                    DataCopy(self.gq[(plane * {g.phases} + p) * {g.grid}], ob[p * {chunk}], "
                 f"DataCopyParams(ra, {g.wq * es // 32}, 0, {(g.phases * g.grid - g.wq) * es // 32}))")
    else:
        decode = head + f"""
            ra = min({g.rr}, {g.hq} - a0)
            dz = dpi - {pd}
            hr0 = a0 * {sh} - {ph}
            lo = max(0, -hr0)
            hi = min({rs}, {h} - hr0)
            if dz < 0 or dz >= {d}:
                hi = lo"""
        # xq planes of (b, ci): P of them, one grid apart; all written by one strided copy
        store = (f"                DataCopy(self.gq[plane * {g.phases * g.grid} + dpi * {g.hq * g.wq} + a0 * {g.wq}], "
                 f"ob, DataCopyParams({g.phases}, ra * {g.wq * es // 32}, ({chunk} - ra * {g.wq}) * {es} // 32, "
                 f"({g.grid} - ra * {g.wq}) * {es} // 32))")
    return f'''
class Pre_{n}:
    def Init(self, x, w, b, xq, wt, ones):
        self.v = GetBlockIdx()
        self.gx = GlobalTensor()
        self.gx.SetGlobalBuffer(x)
        self.gw = GlobalTensor()
        self.gw.SetGlobalBuffer(w)
        self.gq = GlobalTensor()
        self.gq.SetGlobalBuffer(xq)
        self.gt = GlobalTensor()
        self.gt.SetGlobalBuffer(wt)
        self.go = GlobalTensor()
        self.go.SetGlobalBuffer(ones)
        self.pipe = TPipe()
        self.st = [TBuf(TPosition.VECCALC), TBuf(TPosition.VECCALC)]
        self.ob = [TBuf(TPosition.VECCALC), TBuf(TPosition.VECCALC)]
        self.ofb = [TBuf(TPosition.VECCALC) for q in range({nv})]
        for k in range(2):
            self.pipe.InitBuffer(self.st[k], {rs * g.ws * es})
            self.pipe.InitBuffer(self.ob[k], {g.phases * chunk * es})
        for q in range({nv}):
            self.pipe.InitBuffer(self.ofb[q], {chunk * 4})
        self.wst = TBuf(TPosition.VECCALC)
        self.pipe.InitBuffer(self.wst, {g.nq * sp * es})
        self.wo = TBuf(TPosition.VECCALC)
        self.pipe.InitBuffer(self.wo, {g.nq * kkp * es})
        self.wof = TBuf(TPosition.VECCALC)
        self.pipe.InitBuffer(self.wof, {g.nq * kkp * 4})
        self.wtf = TBuf(TPosition.VECCALC)
        self.pipe.InitBuffer(self.wtf, {g.kp * 4})
        self.wtq = TBuf(TPosition.VECCALC)
        self.pipe.InitBuffer(self.wtq, {g.kp * 4})

    def Process(self):
        self.Weights()
        self.Ones()
        self.Input()

    def Weights(self):
        # Wt[co, tap, ci] = W[co, ci, tap] (ci < Cin; zero up to Kp) for this AIV's rows co: the
        # staged rows have zeros past Cin * KK, where the offsets of ci >= Cin land
        c0 = self.v * {g.nq}
        cnt = min({g.nq}, {cout} - c0)
        if cnt <= 0:
            return
        wst = self.wst.Get({dt})
        Duplicate(wst, 0.0, {g.nq * sp})
        SetFlag(HardEvent.V_MTE2, 2)
        WaitFlag(HardEvent.V_MTE2, 2)
        DataCopyPad(wst, self.gw[c0 * {row_w}], DataCopyExtParams(cnt, {row_w * es}, 0, {w_gap}, 0), {w_pad})
        offs = self.wof.Get(int32)
{w_row0}
        for t in range(1, {kk}):
            Adds(offs[t * {g.kp}], offs, t * {w_step * es}, {g.kp})
        for r in range(1, cnt):
            Adds(offs[r * {kkp}], offs, r * {sp * es}, {kkp})
        SetFlag(HardEvent.MTE2_V, 2)
        WaitFlag(HardEvent.MTE2_V, 2)
        wo = self.wo.Get({dt})
        Gather(wo, wst, offs, 0, cnt * {kkp})
        SetFlag(HardEvent.V_MTE3, 2)
        WaitFlag(HardEvent.V_MTE3, 2)
        DataCopy(self.gt[c0 * {kkp}], wo, cnt * {kkp})

    def Ones(self):
        if self.v != {g.nv - 1}:           # the last AIV: the first ones hold the weight rows
            return
        o = self.ob[1].Get({dt})
        Duplicate(o, 1.0, {g.nt})
        SetFlag(HardEvent.V_MTE3, 3)
        WaitFlag(HardEvent.V_MTE3, 3)
        DataCopy(self.go[0], o, {g.nt})
        SetFlag(HardEvent.MTE3_V, 3)
        WaitFlag(HardEvent.MTE3_V, 3)

    def WeightsReady(self):
        # every AIV has written its weight rows: tell this AIV's AIC (once, after the first unit)
        CrossCoreWaitFlag({FLAG_AIV})
        CrossCoreSetFlag(2, PIPE_MTE2, {FLAG_WEIGHTS})
        self.wsent = True

    def Input(self):
        self.wsent = {not g.defer_weights}
        self.offs = [self.ofb[q].Get(int32) for q in range({nv})]
        SetFlag(HardEvent.V_S, 2)
        WaitFlag(HardEvent.V_S, 2)
{ramps}
        SetFlag(HardEvent.V_S, 3)
        WaitFlag(HardEvent.V_S, 3)
        SetFlag(HardEvent.S_V, 3)
        WaitFlag(HardEvent.S_V, 3)
{rows_fill}
        Duplicate(self.st[0].Get({dt}), 0.0, {rs * g.ws})
        Duplicate(self.st[1].Get({dt}), 0.0, {rs * g.ws})
        SetFlag(HardEvent.V_MTE2, 0)
        SetFlag(HardEvent.V_MTE2, 1)
        SetFlag(HardEvent.MTE3_V, 0)
        SetFlag(HardEvent.MTE3_V, 1)
        k = 0
        for w in range({g.waves}):
            # wave w: input channels [c_lo, c_lo + nc), the AICs' K chunk w, over all AIVs
            c_lo = w * {g.wave_ch}
            nc = min({g.wave_ch}, {spec.cin} - c_lo)
            ncg = (nc + {ppc - 1}) // {ppc}
            nu = {spec.batch * g.dp * na} * ncg
            per = (nu + {g.nv - 1}) // {g.nv}
            for u in range(self.v * per, min(nu, self.v * per + per)):
                s = k % 2
                k += 1
{indent(decode)}
                st = self.st[s].Get({dt})
                WaitFlag(HardEvent.V_MTE2, s)
                if hi > lo:
                    DataCopyPad(st[lo * {g.ws} + {lead}], self.gx[(plane * {d} + dz) * {h * w} + (hr0 + lo) * {w}],
                                {copy_w}, {pad_w})
                SetFlag(HardEvent.MTE2_V, s)
                WaitFlag(HardEvent.MTE2_V, s)
                if lo > 0:
                    Duplicate(st, 0.0, lo * {g.ws})
                if max(hi, lo) < {rs}:
                    Duplicate(st[max(hi, lo) * {g.ws}], 0.0, ({rs} - max(hi, lo)) * {g.ws})
                ob = self.ob[s].Get({dt})
                WaitFlag(HardEvent.MTE3_V, s)
                for p in range({g.phases}):
                    Gather(ob[p * {chunk}], st, self.offs[{variant}], ({row_phase}) * {g.ws * es}, ra * {g.wq})
                SetFlag(HardEvent.V_MTE2, s)
                SetFlag(HardEvent.V_MTE3, s)
                WaitFlag(HardEvent.V_MTE3, s)
                if True:
{indent(store)}
                SetFlag(HardEvent.MTE3_V, s)
                if not self.wsent:
                    self.WeightsReady()
            if not self.wsent:
                self.WeightsReady()
            CrossCoreSetFlag(0, PIPE_MTE3, {FLAG_AIV})
            CrossCoreWaitFlag({FLAG_AIV})
            CrossCoreSetFlag(2, PIPE_MTE3, {FLAG_READY})
        WaitFlag(HardEvent.V_MTE2, 0)
        WaitFlag(HardEvent.V_MTE2, 1)
        WaitFlag(HardEvent.MTE3_V, 0)
        WaitFlag(HardEvent.MTE3_V, 1)
'''
