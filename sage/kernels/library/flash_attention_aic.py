"""The cube side of flash_attention.py's kernel text: the shared Init and schedule, and the
AIC's two steps (S^T = K_j Q_i^T per key tile, P V per group of key tiles).

The text is the design of examples/kernels/flash_attention.py with the shape, dtype, GQA and
key-tile range made parameters of the generated file (module constants written by
flash_attention.py): Q rows of head `bh` at bh * SQ * D, K/V rows of its kv head at
kv * SKV * D, kv = (bh // HEADS) * KV_HEADS + bh % HEADS // (HEADS // KV_HEADS).
"""

from __future__ import annotations

# Every core computes the same plan (a data mask's key ranges are read by every core alike):
# items (a query tile of one head) go, query tiles from the last, to the least loaded block,
# so the plan needs no communication.
SCHEDULE = '''
def schedule(blocks, block, ranges):
    """(head, q tile, first key tile, end key tile, item, first group, last group) of each group
    of `block`."""
    load = [0] * blocks
    groups = []
    items = 0
    for i in range(NQ - 1, -1, -1):
        for g in range(BATCH * HEADS):
            lo, hi = key_range(g, i, ranges)
            best = 0
            for b in range(1, blocks):
                if load[b] < load[best]:
                    best = b
            load[best] = load[best] + hi - lo
            if best == block:
                for j0 in range(lo, hi, GROUP):
                    j1 = min(j0 + GROUP, hi)
                    groups.append((g, i, j0, j1, items, j0 == lo, j1 == hi))
                items += 1
    return groups


def kv_head(g):
    return g // HEADS * KV_HEADS + g % HEADS // (HEADS // KV_HEADS)


def handover(que, x):
    """EnQue then DeQue: the consumer pipe waits for the producer's writes."""
    que.EnQue(x)
    return que.DeQue(x.dtype)


def fold(op, dst, src, que):
    """Fold the 128 key rows of src pairwise down to one 64-wide row in dst[0:64] (the first
    level may leave src: then `que` gets it back)."""
    w = TILE * HALF // 2
    op(dst, src, src[w], w)
    if que is not None:
        que.FreeTensor(src)
    while w > HALF:
        w //= 2
        op(dst, dst, dst[w], w)
'''

INIT_HEAD = '''
class KernelFlashAttention:
    def Init(self, q, k, v, o, ws_s, ws_p, ws_o, bits, rng):
        self.pipe = TPipe()
        n = TILE * HALF
        block = GetBlockIdx() // GetTaskRation()
        self.ws_s, self.ws_p, self.ws_o = GlobalTensor(), GlobalTensor(), GlobalTensor()
        self.ws_s.SetGlobalBuffer(ws_s, block * DEPTH * GROUP * TILE * TILE, DEPTH * GROUP * TILE * TILE)
        self.ws_p.SetGlobalBuffer(ws_p, block * DEPTH * GROUP * TILE * TILE, DEPTH * GROUP * TILE * TILE)
        self.ws_o.SetGlobalBuffer(ws_o, block * DEPTH * TILE * D, DEPTH * TILE * D)
        if ASCEND_IS_AIC:
            self.q_gm, self.k_gm, self.v_gm = GlobalTensor(), GlobalTensor(), GlobalTensor()
            self.q_gm.SetGlobalBuffer(q, 0, BATCH * HEADS * SQ * D)
            self.k_gm.SetGlobalBuffer(k, 0, BATCH * KV_HEADS * SKV * D)
            self.v_gm.SetGlobalBuffer(v, 0, BATCH * KV_HEADS * SKV * D)
            self.q1, self.k1 = TQue(TPosition.B1, 1), TQue(TPosition.A1, 2)
            self.v1, self.p1 = TQue(TPosition.B1, GROUP), TQue(TPosition.A1, 2)
            self.a2, self.qt, self.vb = TQue(TPosition.A2, 2), TQue(TPosition.B2, 1), TQue(TPosition.B2, 1)
            self.co1 = TQue(TPosition.CO1, 2)
            for que, num, nbytes in ((self.q1, 1, TILE * D * 2), (self.k1, 2, TILE * D * 2),
                                     (self.v1, GROUP, TILE * D * 2), (self.p1, 2, GROUP * TILE * TILE * 2),
                                     (self.a2, 2, TILE * TILE * 2), (self.qt, 1, TILE * D * 2),
                                     (self.vb, 1, TILE * D * 2), (self.co1, 2, TILE * TILE * 4)):
                self.pipe.InitBuffer(que, num, nbytes)
        else:
            self.InitVector(o, bits)
        self.groups = schedule(GetBlockNum(), block, read_ranges(rng))

    def Pipeline(self, ahead, behind):
        """ahead(k + DEPTH - 1) before behind(k): S before PV on the AIC, softmax before O update on an AIV."""
        n = len(self.groups)
        for k in range(min(n, DEPTH - 1)):
            ahead(k)
        for k in range(n):
            if k + DEPTH - 1 < n:
                ahead(k + DEPTH - 1)
            behind(k)
'''

AIC = '''
    # -- AIC ----------------------------------------------------------------------------------

    def LoadRows(self, que, gm, head, tile, length):
        rows = min(TILE, length - tile * TILE)
        x = que.AllocTensor(DT)
        DataCopy(x, gm[(head * length + tile * TILE) * D], Nd2NzParams(1, rows, D, 0, D, TILE, 1, 0))
        return handover(que, x)

    def ToL0(self, que, l1_que, x, cols, transpose):
        """A [128 x cols] tile of L1 (freed to `l1_que`) into L0A/L0B, transposed if asked."""
        y = que.AllocTensor(DT)
        LoadData(y, x, LoadData2DParams(TILE, cols, 0, transpose))
        l1_que.FreeTensor(x)
        return handover(que, y)

    def ScoreGroup(self, k):
        g, i, j0, j1, item, first, last = self.groups[k]
        if first:
            self.qt_t = self.ToL0(self.qt, self.q1, self.LoadRows(self.q1, self.q_gm, g, i, SQ), D, True)
        kv = kv_head(g)
        for j in range(j0, j1):
            a2 = self.ToL0(self.a2, self.k1, self.LoadRows(self.k1, self.k_gm, kv, j, SKV), D, False)
            c = self.co1.AllocTensor(float32)
            Mmad(c, a2, self.qt_t, MmadParams(TILE, TILE, D, True))
            self.a2.FreeTensor(a2)
            c = handover(self.co1, c)
            slot = (k % DEPTH) * GROUP + j - j0
            for h in range(2):   # one contiguous [keys x 64] block per AIV
                Fixpipe(self.ws_s[(slot * 2 + h) * TILE * HALF], c[h * HALF],
                        FixpipeParams(TILE, HALF, TILE, HALF))
            self.co1.FreeTensor(c)
            CrossCoreSetFlag(2, PIPE_FIX, FLAG_S)
        if last:
            self.qt.FreeTensor(self.qt_t)

    def ValueGroup(self, k):
        g, i, j0, j1, item, first, last = self.groups[k]
        kv = kv_head(g)
        v1s = [self.LoadRows(self.v1, self.v_gm, kv, j, SKV) for j in range(j0, j1)]   # overlap the softmax
        CrossCoreWaitFlag(FLAG_P)
        p1 = self.p1.AllocTensor(DT)     # the group's P^T tiles side by side: 128 rows per group
        DataCopy(p1, self.ws_p[(k % DEPTH) * TILE * GROUP * TILE],
                 Nd2NzParams(1, TILE, (j1 - j0) * TILE, 0, GROUP * TILE, TILE, 1, 0))
        p1 = handover(self.p1, p1)
        c = self.co1.AllocTensor(float32)
        for j in range(j0, j1):
            vb = self.ToL0(self.vb, self.v1, v1s[j - j0], D, False)
            a2 = self.a2.AllocTensor(DT)
            LoadData(a2, p1[(j - j0) * TILE], LoadData2DParams(TILE, TILE, (j1 - j0) * TILE, True))
            a2 = handover(self.a2, a2)
            Mmad(c, a2, vb, MmadParams(TILE, D, TILE, j == j0))
            self.a2.FreeTensor(a2)
            self.vb.FreeTensor(vb)
        self.p1.FreeTensor(p1)
        c = handover(self.co1, c)
        Fixpipe(self.ws_o[(k % DEPTH) * TILE * D], c, FixpipeParams(TILE, D, 0, D))
        self.co1.FreeTensor(c)
        CrossCoreSetFlag(2, PIPE_FIX, FLAG_O)
'''
