"""The data-mask pre-pass of flash_attention.py: one AIV-only launch that turns a boolean mask
[MASK_B, MASK_H, SQ, SKV] into the bits the attention kernel's AIVs Select with, and into the
range of key tiles each query tile must visit.

The attention kernel holds scores transposed (key rows x query columns, 64 columns per AIV),
so unit (tile i, j, AIV half h) of the output is 128 x 64 bits in that order, 1 KB at
((mask index * NQ + i) * NK + j) * 2 + h. A unit: DataCopyPad the 64 query rows x 128 key
bytes, Cast uint8 -> half, Gather the transpose (byte offsets (c * 128 + r) * 2 of row r,
column c, made once), CompareScalar to bits (set = visible), DataCopy out. Query rows beyond
SQ are made visible (those outputs are never stored and must stay finite); keys beyond SKV
are left to the attention kernel, which sets their scores to NEG itself (here they count as
masked).

Key ranges: a unit is (mask index and query tile = row, AIV half, chunk of CHUNK key tiles),
dealt over the blocks; a tile whose 64 x 128 valid entries are all masked (a ReduceMin, or
ReduceMax for the keep convention, of the 0/1 values) is not seen, and the unit writes the
first and one past the last key tile it saw (NK, 0 for none) to the `parts` workspace. After
SyncAll (the kernel is MIX_AIV_1_0: vector cores only, with the all-core barrier; the Ascend C
workspace + SyncAll pattern of tile_split.py), each row's parts are copied to UB and joined
into `ranges[row]`, which the attention kernel reads with two scalar loads per query tile and
visits only the key tiles between (tiles inside the range that are fully masked are still
computed, under their bits). A causal mask given as data thus skips the tiles above the
diagonal. A query tile that sees no key gets the range (0, 1) (torch gives NaN there; the
kernel only needs a non-empty range). Splitting the key tiles into chunks keeps the vector
cores busy when there are few rows (decode: one query tile per batch).

Packed GQA decode (MASK_ROW = 0, see flash_attention.py): the query rows of a tile are the
heads sharing a kv head at the one query position, so all read mask row 0: one row is
copied and the Gather offsets ignore the query column.
"""

from __future__ import annotations

PREPASS = '''
class KernelAttentionMask:
    def Init(self, mask, bits, parts, ranges):
        n = TILE * HALF
        self.pipe = TPipe()
        self.mask_gm, self.bits_gm = GlobalTensor(), GlobalTensor()
        self.mask_gm.SetGlobalBuffer(mask, 0, MASK_B * MASK_H * MASK_SQ * SKV)
        self.bits_gm.SetGlobalBuffer(bits, 0, MASK_B * MASK_H * NQ * NK * 2 * n // 8)
        self.parts_gm, self.ranges_gm = GlobalTensor(), GlobalTensor()
        self.parts_gm.SetGlobalBuffer(parts, 0, ROWS * 2 * PRE_SPLIT * 2)
        self.ranges_gm.SetGlobalBuffer(ranges, 0, ROWS * 2)
        self.inq, self.outq = TQue(TPosition.VECIN, 2), TQue(TPosition.VECOUT, 2)
        self.pipe.InitBuffer(self.inq, 2, n)
        self.pipe.InitBuffer(self.outq, 2, n // 8)
        self.wide, self.tr, self.offsets = TBuf(TPosition.VECCALC), TBuf(TPosition.VECCALC), TBuf(TPosition.VECCALC)
        self.work, self.seen, self.joined = TBuf(TPosition.VECCALC), TBuf(TPosition.VECCALC), TQue(TPosition.VECIN, 1)
        for buf, nbytes in ((self.wide, n * 2), (self.tr, n * 2), (self.offsets, n * 4), (self.work, n * 2),
                            (self.seen, CHUNK * 32)):
            self.pipe.InitBuffer(buf, nbytes)
        off = self.offsets.Get(int32)
        for c in range(HALF):                       # row 0: column c at byte c * 128 * 2
            off.SetValue(c, c * TILE * 2 * MASK_ROW)
        SetFlag(HardEvent.S_V, 0)
        WaitFlag(HardEvent.S_V, 0)
        for r in range(1, TILE):
            Adds(off[r * HALF], off, r * 2, HALF)
        self.pipe.InitBuffer(self.joined, 1, (4 * PRE_SPLIT * 4 + 31) // 32 * 32)

    def Part(self, u):
        """Unit u = (row, half, chunk): its tiles' bits, then the first and one past the last key
        tile it saw (each tile's any-visible value waits in UB: one V -> S sync per unit)."""
        r, h, c = u // (2 * PRE_SPLIT), u // PRE_SPLIT % 2, u % PRE_SPLIT
        j0, j1 = c * CHUNK, min(NK, (c + 1) * CHUNK)
        seen = self.seen.Get(float16)
        for j in range(j0, j1):
            self.Unit(r, j, h, seen[(j - j0) * 16])
        SetFlag(HardEvent.V_S, 0)
        WaitFlag(HardEvent.V_S, 0)
        lo, hi = NK, 0
        for j in range(j0, j1):
            if seen.GetValue((j - j0) * 16) == VISIBLE:
                lo = min(lo, j)
                hi = j + 1
        SetFlag(HardEvent.S_V, 0)
        WaitFlag(HardEvent.S_V, 0)
        self.parts_gm.SetValue(u * 2, lo)
        self.parts_gm.SetValue(u * 2 + 1, hi)

    def Join(self, r):
        """Row r's parts (both halves, every chunk) joined into ranges[r]."""
        count = 4 * PRE_SPLIT
        x = self.joined.AllocTensor(int32)
        DataCopyPad(x, self.parts_gm[r * count], DataCopyExtParams(1, count * 4, 0, 0, 0))
        x = handover(self.joined, x)
        SetFlag(HardEvent.V_S, 1)              # (the queue hands it to V; the scalar unit reads it)
        WaitFlag(HardEvent.V_S, 1)
        lo, hi = NK, 0
        for p in range(2 * PRE_SPLIT):
            lo = min(lo, x.GetValue(p * 2))
            hi = max(hi, x.GetValue(p * 2 + 1))
        self.joined.FreeTensor(x)
        if hi <= lo:
            lo, hi = 0, 1
        self.ranges_gm.SetValue(r * 2, lo)
        self.ranges_gm.SetValue(r * 2 + 1, hi)

    def Unit(self, r, j, h, seen):
        """Bits of (row r, key tile j, half h); seen[0] = VISIBLE when any valid entry is visible."""
        n = TILE * HALF
        u = (r * NK + j) * 2 + h
        i, mi = r % NQ, r // NQ
        q0, k0 = i * TILE + h * HALF, j * TILE
        rows, cols = max(0, min(HALF, SQ - q0)), min(TILE, SKV - k0)
        if MASK_ROW == 0:                           # packed GQA decode: every query row is mask row 0
            rows = min(rows, 1)
        raw = self.inq.AllocTensor(bool_)
        if rows > 0:
            DataCopyPad(raw, self.mask_gm[(mi * MASK_SQ + q0 * MASK_ROW) * SKV + k0],
                        DataCopyExtParams(rows, cols, SKV - cols, (TILE - (cols + 31) // 32 * 32) // 32, 0))
        raw = handover(self.inq, raw)
        wide = self.wide.Get(float16)
        Cast(wide, raw.ReinterpretCast(uint8), RoundMode.CAST_NONE, n)
        self.inq.FreeTensor(raw)
        if cols < TILE:                             # keys beyond SKV: masked (one repeat of 128 per row)
            full = (1 << 64) - 1
            keep_lo, keep_hi = (1 << min(cols, 64)) - 1, (1 << max(cols - 64, 0)) - 1
            Duplicate(wide, 1.0 - VISIBLE, [full ^ keep_lo, full ^ keep_hi], HALF, 1, 8)
        if rows > 0:
            SEEN_REDUCE(seen, wide, self.work.Get(float16), rows * TILE)
        else:
            Duplicate(seen, 1.0 - VISIBLE, 16)
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
def attention_mask(mask, bits, parts, ranges):
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIV_1_0)
    op = KernelAttentionMask()
    op.Init(mask, bits, parts, ranges)
    for u in range(GetBlockIdx(), ROWS * 2 * PRE_SPLIT, GetBlockNum()):
        op.Part(u)
    SyncAll()
    for r in range(GetBlockIdx(), ROWS, GetBlockNum()):
        op.Join(r)
'''


def prepass_text(true_keeps: bool) -> str:
    """Any visible entry: the 0/1 values' minimum is 0 (True = masked) or maximum is 1 (True = keep)."""
    return PREPASS.replace("SEEN_REDUCE", "ReduceMax" if true_keeps else "ReduceMin")
