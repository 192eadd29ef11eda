"""The kernel text of conv_gemm.py: the AIC class (implicit GEMM over the prologue's xq)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sage.kernels.library.conv_flags import FLAG_READY
from sage.kernels.library.conv_gemm import L0C_BYTES
from sage.kernels.library.source import DTYPE_SIZE, dsl_dtype

if TYPE_CHECKING:
    from sage.kernels.library.conv_gemm import ConvSpec, Geometry


def aic_text(spec: ConvSpec, g: Geometry) -> str:
    es, dt, n = DTYPE_SIZE[spec.dtype], dsl_dtype(spec.dtype), spec.name
    od, oh, ow = spec.out_size
    kk, cin, cout = len(g.taps), g.cv, spec.cout
    chp = g.pl * g.grid
    osp = od * oh * ow
    per_od = -(-oh // g.rows) * g.segs
    bias_mmad = f'''
        if self.has_bias:
            a2 = self.qa2.AllocTensor({dt})
            LoadData(a2, self.ba, LoadData2DParams({g.mp}, 16, 16, False))
            self.qa2.EnQue(a2)
            b2 = self.qb2.AllocTensor({dt})
            LoadData(b2, self.on, LoadData2DParams(16, {g.nt}, {g.nt}, False))
            self.qb2.EnQue(b2)
            a2 = self.qa2.DeQue({dt})
            b2 = self.qb2.DeQue({dt})
            Mmad(cl, a2, b2, MmadParams({cout}, {g.nt}, 1, False))
            self.qa2.FreeTensor(a2)
            self.qb2.FreeTensor(b2)'''
    kwu = spec.kernel[2] if g.unroll else 1          # GEMM channels per input channel
    if g.wq == ow and g.segs == 1:
        # grid rows are as long as output rows: the tile's rows are one run of Y per channel
        store = f"""        Fixpipe(self.gy[b * {cout * osp} + od * {oh * ow} + a0 * {ow}], cl,
                FixpipeParams({cout}, rr * {ow}, {g.nt}, {osp}))"""
    else:             # one Fixpipe per grid row: its first OW columns (or a row segment's)
        store = f"""        cols = min({g.nt}, {ow} - c0)
        for r in range(rr):
            Fixpipe(self.gy[b * {cout * osp} + od * {oh * ow} + (a0 + r) * {ow} + c0], cl[r * {g.wq}],
                    FixpipeParams({cout}, cols, {g.nt}, {osp}))"""
    co_bufs = 2 if g.tpb > 1 and 2 * g.mp * g.nt * 4 <= L0C_BYTES else 1
    return f'''
class Cube_{n}:
    def Init(self, b, out, xq, wt, ones):
        self.t0 = GetBlockIdx() * {g.tpb}
        self.t1 = min({g.tiles}, self.t0 + {g.tpb})
        self.has_bias = b is not None
        self.gq = GlobalTensor()
        self.gq.SetGlobalBuffer(xq)
        self.gt = GlobalTensor()
        self.gt.SetGlobalBuffer(wt)
        self.gy = GlobalTensor()
        self.gy.SetGlobalBuffer(out)
        self.pipe = TPipe()
        self.wres = TBuf(TPosition.A1)
        self.pipe.InitBuffer(self.wres, {kk * g.mp * g.kp * es})
        self.bab = TBuf(TPosition.A1)
        self.pipe.InitBuffer(self.bab, {g.mp * 16 * es})
        self.onb = TBuf(TPosition.B1)
        self.pipe.InitBuffer(self.onb, {16 * g.nt * es})
        self.qb1 = TQue(TPosition.B1, 2)
        self.pipe.InitBuffer(self.qb1, 2, {g.kc * g.gcols * es})
        self.qa2 = TQue(TPosition.A2, 2)
        self.pipe.InitBuffer(self.qa2, 2, {g.mp * g.kc * es})
        self.qb2 = TQue(TPosition.B2, 2)
        self.pipe.InitBuffer(self.qb2, 2, {g.kc * g.nt * es})
        # two accumulators when they fit: a tile's Fixpipes overlap the next tile's Mmads
        self.qc = TQue(TPosition.CO1, {co_bufs})
        self.pipe.InitBuffer(self.qc, {co_bufs}, {g.mp * g.nt * 4})
        if self.t0 >= self.t1:
            return
        self.wr = self.wres.Get({dt})
        DataCopy(self.wr, self.gt[0], Nd2NzParams(1, {cout}, {kk * g.kp}, 0, {kk * g.kp}, {g.mp}, 1, 0))
        self.ba = self.bab.Get({dt})
        self.on = self.onb.Get({dt})
        if self.has_bias:
            gb = GlobalTensor()
            gb.SetGlobalBuffer(b)
            DataCopy(self.ba, gb[0], Nd2NzParams(1, {cout}, 1, 0, 1, {g.mp}, 1, 0))
            go = GlobalTensor()
            go.SetGlobalBuffer(ones)
            DataCopy(self.on, go[0], Nd2NzParams(1, 1, {g.nt}, 0, {g.nt}, 16, 1, 0))

    def Process(self):
        CrossCoreWaitFlag({FLAG_READY})         # wave 0 of the input laid out
        self.waves = 1
        if self.t0 >= self.t1:
            for w in range(1, {g.waves}):
                CrossCoreWaitFlag({FLAG_READY})
            return
        SetFlag(HardEvent.MTE2_MTE1, 0)
        WaitFlag(HardEvent.MTE2_MTE1, 0)
        for t in range(self.t0, self.t1):
            bo = t // {per_od}            # b * OD + od
            rest = t % {per_od}
            a0 = rest // {g.segs} * {g.rows}
            c0 = rest % {g.segs} * {g.nt}
            self.Tile(bo // {od}, bo % {od}, a0, min({g.rows}, {oh} - a0), c0)

    def Tile(self, b, od, a0, rr, c0):
        base = b * {cin * chp} + od * {g.hq * g.wq} + a0 * {g.wq} + c0
        cl = self.qc.AllocTensor(float32)
        first = True
        for k0 in range(0, {cin}, {g.kc}):
            # the wave holding this chunk's last input channel
            while self.waves <= min((min(k0 + {g.kc}, {cin}) - 1) // {kwu} // {g.wave_ch}, {g.waves - 1}):
                CrossCoreWaitFlag({FLAG_READY})     # the next wave of input channels is in xq
                self.waves = self.waves + 1
            kc = min({g.kc}, {cin} - k0)
            kcp = (kc + 15) // 16 * 16
            for grp in GROUPS_{n}:
                src = base + grp[0] * {g.grid} + grp[1]
                cols = grp[2]
                b1 = self.qb1.AllocTensor({dt})
                DataCopy(b1, self.gq[src + k0 * {chp}], Nd2NzParams(1, kc, cols, 0, {chp}, kcp, 1, 0))
                self.qb1.EnQue(b1)
                b1 = self.qb1.DeQue({dt})
                for t, off in grp[3]:
                    a2 = self.qa2.AllocTensor({dt})
                    LoadData(a2, self.wr[t * {g.kp} + k0], LoadData2DParams({g.mp}, kcp, {kk * g.kp}, False))
                    self.qa2.EnQue(a2)
                    b2 = self.qb2.AllocTensor({dt})
                    LoadData(b2, b1[off], LoadData2DParams(kcp, {g.nt}, cols, False))
                    self.qb2.EnQue(b2)
                    a2 = self.qa2.DeQue({dt})
                    b2 = self.qb2.DeQue({dt})
                    Mmad(cl, a2, b2, MmadParams({cout}, {g.nt}, kc, first))
                    first = False
                    self.qa2.FreeTensor(a2)
                    self.qb2.FreeTensor(b2)
                self.qb1.FreeTensor(b1)
{bias_mmad}
        self.qc.EnQue(cl)
        cl = self.qc.DeQue(float32)
{store}
        self.qc.FreeTensor(cl)
'''
