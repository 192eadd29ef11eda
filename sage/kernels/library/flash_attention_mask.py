"""The data-mask pre-pass of flash_attention.py: one AIV-only launch that turns a boolean mask
[MASK_B, MASK_H, SQ, SKV] into the bits the attention kernel's AIVs Select with.

The attention kernel holds scores transposed (key rows x query columns, 64 columns per AIV),
so unit (tile i, j, AIV half h) of the output is 128 x 64 bits in that order, 1 KB at
((mask index * NQ + i) * NK + j) * 2 + h. A unit: DataCopyPad the 64 query rows x 128 key
bytes, Cast uint8 -> half, Gather the transpose (byte offsets (c * 128 + r) * 2 of row r,
column c, made once), CompareScalar to bits (set = visible), DataCopy out. Query rows beyond
SQ are made visible (those outputs are never stored and must stay finite); keys beyond SKV
are left to the attention kernel, which sets their scores to NEG itself.
"""

from __future__ import annotations

PREPASS = '''
class KernelAttentionMask:
    def Init(self, mask, bits):
        n = TILE * HALF
        self.pipe = TPipe()
        self.mask_gm, self.bits_gm = GlobalTensor(), GlobalTensor()
        self.mask_gm.SetGlobalBuffer(mask, 0, MASK_B * MASK_H * SQ * SKV)
        self.bits_gm.SetGlobalBuffer(bits, 0, MASK_B * MASK_H * NQ * NK * 2 * n // 8)
        self.inq, self.outq = TQue(TPosition.VECIN, 2), TQue(TPosition.VECOUT, 2)
        self.pipe.InitBuffer(self.inq, 2, n)
        self.pipe.InitBuffer(self.outq, 2, n // 8)
        self.wide, self.tr, self.offsets = TBuf(TPosition.VECCALC), TBuf(TPosition.VECCALC), TBuf(TPosition.VECCALC)
        for buf, nbytes in ((self.wide, n * 2), (self.tr, n * 2), (self.offsets, n * 4)):
            self.pipe.InitBuffer(buf, nbytes)
        off = self.offsets.Get(int32)
        for c in range(HALF):                       # row 0: column c at byte c * 128 * 2
            off.SetValue(c, c * TILE * 2)
        SetFlag(HardEvent.S_V, 0)
        WaitFlag(HardEvent.S_V, 0)
        for r in range(1, TILE):
            Adds(off[r * HALF], off, r * 2, HALF)

    def Unit(self, u):
        n = TILE * HALF
        tile = u // 2
        i, j = tile // NK % NQ, tile % NK
        mi = tile // (NQ * NK)
        q0, k0 = i * TILE + u % 2 * HALF, j * TILE
        rows, cols = max(0, min(HALF, SQ - q0)), min(TILE, SKV - k0)
        raw = self.inq.AllocTensor(bool_)
        if rows > 0:
            DataCopyPad(raw, self.mask_gm[(mi * SQ + q0) * SKV + k0],
                        DataCopyExtParams(rows, cols, SKV - cols, (TILE - (cols + 31) // 32 * 32) // 32, 0))
        raw = handover(self.inq, raw)
        wide = self.wide.Get(float16)
        Cast(wide, raw.ReinterpretCast(uint8), RoundMode.CAST_NONE, n)
        self.inq.FreeTensor(raw)
        if rows < HALF:
            Duplicate(wide[rows * TILE], VISIBLE, (HALF - rows) * TILE)
        tr = self.tr.Get(float16)
        Gather(tr, wide, self.offsets.Get(uint32), 0, n)
        bits = self.outq.AllocTensor(uint8)
        CompareScalar(bits, tr, VISIBLE, CMPMODE.EQ, n)
        bits = handover(self.outq, bits)
        DataCopy(self.bits_gm[u * (n // 8)], bits, n // 8)
        self.outq.FreeTensor(bits)


@kernel
def attention_mask(mask, bits):
    op = KernelAttentionMask()
    op.Init(mask, bits)
    for u in range(GetBlockIdx(), MASK_B * MASK_H * NQ * NK * 2, GetBlockNum()):
        op.Unit(u)
'''


def prepass_text() -> str:
    return PREPASS
