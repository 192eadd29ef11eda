"""The vector side of flash_attention.py's kernel text: online softmax over S^T tiles and the
rescaled accumulation of P V (the design of examples/kernels/flash_attention.py), with the
masking of a tile chosen by the mask kind.

A tile's scores are transposed (key rows x 64 query columns per AIV), so a mask is a bit per
(key, query) in that order, and a masked score becomes NEG (exp gives exactly 0, no inf - inf):
- keys beyond SKV in the last key tile (ND->NZ zero-padded them): a Duplicate of NEG rows;
- causal: key kj is visible to query qi when kj <= qi + CAUSAL_OFF. With CAUSAL_OFF = 128 a + o
  a tile (i, j) is partly masked only when (i - j) * 128 + CAUSAL_OFF is o or o - 128, so two bit
  masks made once cover every tile;
- data: the pre-pass (flash_attention_mask.py) wrote each tile's bits in this order; the AIV
  copies its 1 KB and Selects.
"""

from __future__ import annotations

from typing import Literal

MaskKind = Literal["none", "causal", "data"]

INIT_VECTOR = '''
    # -- AIV ----------------------------------------------------------------------------------
    def InitVector(self, o, bits):
        n = TILE * HALF
        self.sub = GetSubBlockIdx()
        self.o_gm = GlobalTensor()
        self.o_gm.SetGlobalBuffer(o, 0, BATCH * HEADS * SQ * D)
        self.sq, self.oq = TQue(TPosition.VECIN, 2), TQue(TPosition.VECIN, 1)
        self.pq = TQue(TPosition.VECOUT, 2)              # P^T tiles, then the output rows
        for que, num, nbytes in ((self.sq, 2, n * 4), (self.oq, 1, HALF * D * 4), (self.pq, 2, n * 2)):
            self.pipe.InitBuffer(que, num, nbytes)
        self.acc, self.tmp, self.stat = TBuf(TPosition.VECCALC), TBuf(TPosition.VECCALC), TBuf(TPosition.VECCALC)
        # tmp: the first level of the max fold; stat: see Stat
        for buf, nbytes in ((self.acc, HALF * D * 4), (self.tmp, n * 2), (self.stat, (3 * DEPTH + 10) * HALF * 4)):
            self.pipe.InitBuffer(buf, nbytes)
'''

INIT_CAUSAL = '''        self.mask = TBuf(TPosition.VECCALC)
        self.pipe.InitBuffer(self.mask, 2 * n // 8)
        self.MakeMask(0, CAUSAL_OFF % TILE)
        self.MakeMask(n // 8, CAUSAL_OFF % TILE - TILE)

    def MakeMask(self, at, delta):
        """Bits at byte `at`: (key r, query column c of this AIV) set where r - (64 sub + c) <= delta."""
        later = self.tmp.Get(float16)
        Duplicate(later, 0.0, TILE * HALF)
        for r in range(TILE):
            masked = min(HALF, r - self.sub * HALF - delta)       # columns c < r - 64 sub - delta
            if masked > 0:
                Duplicate(later[r * HALF], 1.0, masked)
        CompareScalar(self.mask.Get(uint8)[at], later, 0.0, CMPMODE.EQ, TILE * HALF)
'''

INIT_DATA = '''        self.bits_gm = GlobalTensor()
        self.bits_gm.SetGlobalBuffer(bits, 0, MASK_B * MASK_H * NQ * NK * 2 * n // 8)
        self.mq = TQue(TPosition.VECIN, 2)
        self.pipe.InitBuffer(self.mq, 2, n // 8)
'''

TAIL = '''        if j == NK - 1 and SKV % TILE:                     # keys beyond SKV
            Duplicate(s[SKV % TILE * HALF], NEG, (TILE - SKV % TILE) * HALF)
'''

MASK_CAUSAL = '''        delta = (i - j) * TILE + CAUSAL_OFF
        if delta < TILE - 1:
            at = 0 if delta == CAUSAL_OFF % TILE else n // 8
            Select(s, self.mask.Get(uint8)[at], s, NEG, SELMODE.VSEL_TENSOR_SCALAR_MODE, n)
'''

MASK_DATA = '''        unit = ((g // HEADS % MASK_B * MASK_H + g % HEADS % MASK_H) * NQ + i) * NK + j
        bits = self.mq.AllocTensor(uint8)
        DataCopy(bits, self.bits_gm[(unit * 2 + self.sub) * (n // 8)], n // 8)
        bits = handover(self.mq, bits)
        Select(s, bits, s, NEG, SELMODE.VSEL_TENSOR_SCALAR_MODE, n)
        self.mq.FreeTensor(bits)
'''

VECTOR = '''
    def Stat(self, slot):
        """64 floats: m and l of item k at slots k % DEPTH and DEPTH + k % DEPTH (several items can be
        in flight), alpha of group k at 2 DEPTH + k % DEPTH, then scratch; 8 slots of broadcast rows."""
        return self.stat.Get(float32)[slot * HALF]

    def Scores(self, k, g, i, j, j0):
        n = TILE * HALF
        s = self.sq.AllocTensor(float32)
        DataCopy(s, self.ws_s[(((k % DEPTH) * GROUP + j - j0) * 2 + self.sub) * n], n)
        s = handover(self.sq, s)
        self.Mask(s, g, i, j)
        return s

    def Softmax(self, k):
        g, i, j0, j1, item, first, last = self.groups[k]
        m, l = self.Stat(item % DEPTH), self.Stat(DEPTH + item % DEPTH)
        alpha, top, total = self.Stat(2 * DEPTH + k % DEPTH), self.Stat(3 * DEPTH), self.Stat(3 * DEPTH + 1)
        tmp = self.tmp.Get(float32)
        for j in range(j0, j1):
            CrossCoreWaitFlag(FLAG_S)
            s = self.Scores(k, g, i, j, j0)
            fold(Max, tmp, s, self.sq)
            self.Accumulate(Max, top, tmp, j == j0)
        if not first:
            Max(top, top, m, HALF)
            Sub(alpha, m, top, HALF)
            Muls(alpha, alpha, SCALE, HALF)
            Exp(alpha, alpha, HALF)
        Adds(m, top, 0.0, HALF)
        for j in range(j0, j1):
            s = self.Scores(k, g, i, j, j0)
            Sub(s, s, m, HALF, TILE, BinaryRepeatParams(1, 1, 1, 8, 8, 0))   # every key row minus m
            Muls(s, s, SCALE, TILE * HALF)
            Exp(s, s, TILE * HALF)
            p = self.pq.AllocTensor(DT)
            Cast(p, s, RoundMode.CAST_RINT, TILE * HALF)
            self.pq.EnQue(p)
            fold(Add, s, s, None)
            self.Accumulate(Add, total, s, j == j0)
            self.sq.FreeTensor(s)
            p = self.pq.DeQue(DT)
            # this AIV's 64 columns of tile j's P^T, in the group's [keys x GROUP*128] matrix
            DataCopy(self.ws_p[(k % DEPTH) * TILE * GROUP * TILE + (j - j0) * TILE + self.sub * HALF], p,
                     DataCopyParams(TILE, HALF * 2 // 32, 0, (GROUP * TILE - HALF) * 2 // 32))
            self.pq.FreeTensor(p)
        CrossCoreSetFlag(2, PIPE_MTE3, FLAG_P)
        if not first:
            Mul(l, l, alpha, HALF)
        self.Accumulate(Add, l, total, first)

    def Accumulate(self, op, acc, x, first):
        if first:
            Adds(acc, x, 0.0, HALF)
        else:
            op(acc, acc, x, HALF)

    def ScaleRows(self, x, factors):
        """x[r, :] *= factors[r]: one 32 B block of each factor, read with block stride 0."""
        brc = self.Stat(3 * DEPTH + 2)
        Brcb(brc, factors, HALF // 8)
        for c in range(0, D, 64):
            Mul(x[c], x[c], brc, 64, HALF, BinaryRepeatParams(1, 1, 0, D // 8, D // 8, 1))

    def Update(self, k):
        g, i, j0, j1, item, first, last = self.groups[k]
        nd = HALF * D
        CrossCoreWaitFlag(FLAG_O)
        pv = self.oq.AllocTensor(float32)
        DataCopy(pv, self.ws_o[(k % DEPTH) * TILE * D + self.sub * nd], nd)
        pv = handover(self.oq, pv)
        acc = self.acc.Get(float32)
        if first:
            Adds(acc, pv, 0.0, nd)
        else:
            self.ScaleRows(acc, self.Stat(2 * DEPTH + k % DEPTH))
            Add(acc, acc, pv, nd)
        self.oq.FreeTensor(pv)
        if last:
            self.Finish(g, i, acc, self.Stat(DEPTH + item % DEPTH))

    def Finish(self, g, i, acc, l):
        first = i * TILE + self.sub * HALF
        rows = min(HALF, SQ - first)
        if rows <= 0:
            return
        inv = self.Stat(3 * DEPTH + 1)
        Reciprocal(inv, l, HALF)
        self.ScaleRows(acc, inv)
        out = self.pq.AllocTensor(DT)
        Cast(out, acc, RoundMode.CAST_RINT, HALF * D)
        out = handover(self.pq, out)
        DataCopy(self.o_gm[(g * SQ + first) * D], out, rows * D)
        self.pq.FreeTensor(out)
'''


def vector_text(kind: MaskKind, key_tail: bool) -> str:
    """The AIV methods for one mask kind (only the masking that kind needs is written)."""
    init = INIT_VECTOR + {"none": "", "causal": INIT_CAUSAL, "data": INIT_DATA}[kind]
    body = (TAIL if key_tail else "") + {"none": "", "causal": MASK_CAUSAL, "data": MASK_DATA}[kind]
    mask = "\n    def Mask(self, s, g, i, j):\n        n = TILE * HALF\n" + (body or "        return\n")
    return init + mask + VECTOR
