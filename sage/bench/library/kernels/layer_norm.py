from sage.npu.ascendc import *
import math

# Library kernels (the vendor schedule) for layer_norm: one variant per distinct kernel,
# chosen by the operands' dtypes and shapes (the task's cases).


# row: last-axis layer_norm of float32 rows, compute in float32
BUFFER_NUM_v0 = 2
TILE_LEN_v0 = 4096
CORES_v0 = 48
BLOCK_DIM_v0 = None
ALIGN_v0 = 8
# UB: 194048 bytes for tiles at 48 bytes per tile element
TILE_v0 = 4040


class KernelRow_v0:
    def Init(self, x, w, b, y, R, C, rpt, rpb, tile):
        self.R = R
        self.C = C
        self.rpt = rpt
        self.tile = tile
        self.r0 = GetBlockIdx() * rpb
        self.r1 = min(R, self.r0 + rpb)
        self.wide = (C + ALIGN_v0 - 1) // ALIGN_v0 * ALIGN_v0 > tile
        self.pipe = TPipe()
        self.gx = GlobalTensor()
        self.gx.SetGlobalBuffer(x, 0, R * C)
        self.gy = GlobalTensor()
        self.gy.SetGlobalBuffer(y, 0, R * C)
        self.qx = TQue(TPosition.VECIN, BUFFER_NUM_v0)
        self.pipe.InitBuffer(self.qx, BUFFER_NUM_v0, _bytes_v0(tile, 4))
        self.qy = TQue(TPosition.VECOUT, BUFFER_NUM_v0)
        self.pipe.InitBuffer(self.qy, BUFFER_NUM_v0, _bytes_v0(tile, 4))
        self.b_xc = TBuf(TPosition.VECCALC)
        self.pipe.InitBuffer(self.b_xc, _bytes_v0(tile, 4))
        self.xc = self.b_xc.Get(float32)
        self.b_tmp = TBuf(TPosition.VECCALC)
        self.pipe.InitBuffer(self.b_tmp, _bytes_v0(tile, 4))
        self.tmp = self.b_tmp.Get(float32)
        self.b_acc = TBuf(TPosition.VECCALC)
        self.pipe.InitBuffer(self.b_acc, _bytes_v0(tile, 4))
        self.acc = self.b_acc.Get(float32)
        self.b_acc2 = TBuf(TPosition.VECCALC)
        self.pipe.InitBuffer(self.b_acc2, _bytes_v0(tile, 4))
        self.acc2 = self.b_acc2.Get(float32)
        self.b_red = TBuf(TPosition.VECCALC)
        self.pipe.InitBuffer(self.b_red, 64)
        self.red = self.b_red.Get(float32)
        self.b_work = TBuf(TPosition.VECCALC)
        self.pipe.InitBuffer(self.b_work, 1024)
        self.work = self.b_work.Get(float32)
        self.gw = GlobalTensor()
        self.gw.SetGlobalBuffer(w, 0, C)
        self.qw = TQue(TPosition.VECIN, 1)
        self.pipe.InitBuffer(self.qw, 1, _bytes_v0(tile, 4))
        self.b_wc = TBuf(TPosition.VECCALC)
        self.pipe.InitBuffer(self.b_wc, _bytes_v0(tile, 4))
        self.wc = self.b_wc.Get(float32)
        self.gb = GlobalTensor()
        self.gb.SetGlobalBuffer(b, 0, C)
        self.qb = TQue(TPosition.VECIN, 1)
        self.pipe.InitBuffer(self.qb, 1, _bytes_v0(tile, 4))
        self.b_bc = TBuf(TPosition.VECCALC)
        self.pipe.InitBuffer(self.b_bc, _bytes_v0(tile, 4))
        self.bc = self.b_bc.Get(float32)
        if not self.wide:
            self.LoadParam(self.qw, self.gw, self.wc, 0, C)
            self.LoadParam(self.qb, self.gb, self.bc, 0, C)

    def Process(self):
        if self.wide:
            for r in range(self.r0, self.r1):
                self.ProcessLongRow(r)
            return
        # The row loop stalls the scalar unit on each reduction result, so the next
        # tile's copy is issued before this tile's compute (software prefetch).
        r0 = self.r0
        if r0 < self.r1:
            self.CopyIn(r0 * self.C, min(self.rpt, self.r1 - r0), self.C)
        while r0 < self.r1:
            nr = min(self.rpt, self.r1 - r0)
            nxt = r0 + nr
            if BUFFER_NUM_v0 > 1 and nxt < self.r1:
                self.CopyIn(nxt * self.C, min(self.rpt, self.r1 - nxt), self.C)
            self.Compute(nr)
            self.CopyOut(r0, nr)
            if BUFFER_NUM_v0 == 1 and nxt < self.r1:
                self.CopyIn(nxt * self.C, min(self.rpt, self.r1 - nxt), self.C)
            r0 = nxt

    def CopyIn(self, off, nr, nc):
        x = self.qx.AllocTensor(float32)
        DataCopyPad(x, self.gx[off], DataCopyExtParams(nr, nc * 4, (self.C - nc) * 4, _gap_v0(nc, 4), 0), DataCopyPadExtParams(False, 0, 0, 0))
        self.qx.EnQue(x)

    def Compute(self, nr):
        s = (self.C + ALIGN_v0 - 1) // ALIGN_v0 * ALIGN_v0
        x = self.qx.DeQue(float32)
        Adds(self.xc, x, 0, nr * s)
        self.qx.FreeTensor(x)
        for r in range(nr):
            ReduceSum(self.red, self.xc[r * s], self.work, self.C)
            SetFlag(HardEvent.V_S, 0)
            WaitFlag(HardEvent.V_S, 0)
            mean = self.red.GetValue(0)
            SetFlag(HardEvent.S_V, 0)
            WaitFlag(HardEvent.S_V, 0)
            mean = mean / self.C
            Adds(self.xc[r * s], self.xc[r * s], -mean, self.C)
            Mul(self.tmp, self.xc[r * s], self.xc[r * s], self.C)
            ReduceSum(self.red, self.tmp, self.work, self.C)
            SetFlag(HardEvent.V_S, 0)
            WaitFlag(HardEvent.V_S, 0)
            var = self.red.GetValue(0)
            SetFlag(HardEvent.S_V, 0)
            WaitFlag(HardEvent.S_V, 0)
            Muls(self.xc[r * s], self.xc[r * s], 1.0 / math.sqrt(var / self.C + 1e-05), self.C)
            Mul(self.xc[r * s], self.xc[r * s], self.wc, self.C)
            Add(self.xc[r * s], self.xc[r * s], self.bc, self.C)
        y = self.qy.AllocTensor(float32)
        Adds(y, self.xc, 0, nr * s)
        self.qy.EnQue(y)

    def CopyOut(self, r0, nr):
        y = self.qy.DeQue(float32)
        DataCopyPad(self.gy[r0 * self.C], y, DataCopyExtParams(nr, self.C * 4, _gap_v0(self.C, 4), 0, 0))
        self.qy.FreeTensor(y)

    def ProcessLongRow(self, r):
        n_ch = (self.C + self.tile - 1) // self.tile
        for k in range(n_ch):
            c0 = k * self.tile
            nc = min(self.tile, self.C - c0)
            self.ChunkIn(r, c0, nc)
            Mul(self.tmp, self.xc, self.xc, nc)
            if k == 0:
                Adds(self.acc2, self.tmp, 0, nc)
            else:
                Add(self.acc2, self.acc2, self.tmp, nc)
            if k == 0:
                Adds(self.acc, self.xc, 0, nc)
            else:
                Add(self.acc, self.acc, self.xc, nc)
        ReduceSum(self.red, self.acc, self.work, min(self.tile, self.C))
        SetFlag(HardEvent.V_S, 0)
        WaitFlag(HardEvent.V_S, 0)
        mean = self.red.GetValue(0)
        SetFlag(HardEvent.S_V, 0)
        WaitFlag(HardEvent.S_V, 0)
        ReduceSum(self.red, self.acc2, self.work, min(self.tile, self.C))
        SetFlag(HardEvent.V_S, 0)
        WaitFlag(HardEvent.V_S, 0)
        sq = self.red.GetValue(0)
        SetFlag(HardEvent.S_V, 0)
        WaitFlag(HardEvent.S_V, 0)
        mean = mean / self.C
        rstd = 1.0 / math.sqrt(max(sq / self.C - mean * mean, 0.0) + 1e-05)
        for k in range(n_ch):
            c0 = k * self.tile
            nc = min(self.tile, self.C - c0)
            self.ChunkIn(r, c0, nc)
            Adds(self.xc, self.xc, -mean, nc)
            Muls(self.xc, self.xc, rstd, nc)
            self.LoadParam(self.qw, self.gw, self.wc, c0, nc)
            Mul(self.xc, self.xc, self.wc, nc)
            self.LoadParam(self.qb, self.gb, self.bc, c0, nc)
            Add(self.xc, self.xc, self.bc, nc)
            self.ChunkOut(r, c0, nc)

    def ChunkIn(self, r, c0, nc):
        self.CopyIn(r * self.C + c0, 1, nc)
        x = self.qx.DeQue(float32)
        Adds(self.xc, x, 0, nc)
        self.qx.FreeTensor(x)

    def ChunkOut(self, r, c0, nc):
        y = self.qy.AllocTensor(float32)
        Adds(y, self.xc, 0, nc)
        self.qy.EnQue(y)
        y = self.qy.DeQue(float32)
        DataCopyPad(self.gy[r * self.C + c0], y, DataCopyExtParams(1, nc * 4, 0, 0, 0))
        self.qy.FreeTensor(y)

    def LoadParam(self, q, g, dst, c0, nc):
        p = q.AllocTensor(float32)
        DataCopyPad(p, g[c0], DataCopyExtParams(1, nc * 4, 0, 0, 0), DataCopyPadExtParams(False, 0, 0, 0))
        q.EnQue(p)
        p = q.DeQue(float32)
        Adds(dst, p, 0, nc)
        q.FreeTensor(p)


def _bytes_v0(elems, size):
    return (elems * size + 31) // 32 * 32


def _gap_v0(nc, size):
    # UB gap between rows, in 32 B blocks, so that every row starts at a multiple of ALIGN_v0 elements.
    return ((nc + ALIGN_v0 - 1) // ALIGN_v0 * ALIGN_v0 * size - (nc * size + 31) // 32 * 32) // 32


@kernel
def row_kernel_v0(x, w, b, y, R, C, rpt, rpb, tile):
    op = KernelRow_v0()
    op.Init(x, w, b, y, R, C, rpt, rpb, tile)
    op.Process()


def row_launch_v0(x, w, b, y, R, C):
    cores = BLOCK_DIM_v0 or CORES_v0
    tile = TILE_v0
    stride = (C + ALIGN_v0 - 1) // ALIGN_v0 * ALIGN_v0
    rpb = (R + cores - 1) // cores
    rpt = max(1, min(tile // stride, rpb)) if stride <= tile else 1
    block_dim = (R + rpb - 1) // rpb
    row_kernel_v0[block_dim](x, w, b, y, R, C, rpt, rpb, tile)


def forward_v0(x, w, b):
    C = x.shape[-1]
    R = x.numel() // C
    y = empty(x.shape, float32)
    row_launch_v0(x, w, b, y, R, C)
    return y


# row: last-axis layer_norm of float16 rows, compute in float32
BUFFER_NUM_v1 = 2
TILE_LEN_v1 = 4096
CORES_v1 = 48
BLOCK_DIM_v1 = None
ALIGN_v1 = 16
# UB: 194048 bytes for tiles at 36 bytes per tile element
TILE_v1 = 4096


class KernelRow_v1:
    def Init(self, x, w, b, y, R, C, rpt, rpb, tile):
        self.R = R
        self.C = C
        self.rpt = rpt
        self.tile = tile
        self.r0 = GetBlockIdx() * rpb
        self.r1 = min(R, self.r0 + rpb)
        self.wide = (C + ALIGN_v1 - 1) // ALIGN_v1 * ALIGN_v1 > tile
        self.pipe = TPipe()
        self.gx = GlobalTensor()
        self.gx.SetGlobalBuffer(x, 0, R * C)
        self.gy = GlobalTensor()
        self.gy.SetGlobalBuffer(y, 0, R * C)
        self.qx = TQue(TPosition.VECIN, BUFFER_NUM_v1)
        self.pipe.InitBuffer(self.qx, BUFFER_NUM_v1, _bytes_v1(tile, 2))
        self.qy = TQue(TPosition.VECOUT, BUFFER_NUM_v1)
        self.pipe.InitBuffer(self.qy, BUFFER_NUM_v1, _bytes_v1(tile, 2))
        self.b_xc = TBuf(TPosition.VECCALC)
        self.pipe.InitBuffer(self.b_xc, _bytes_v1(tile, 4))
        self.xc = self.b_xc.Get(float32)
        self.b_tmp = TBuf(TPosition.VECCALC)
        self.pipe.InitBuffer(self.b_tmp, _bytes_v1(tile, 4))
        self.tmp = self.b_tmp.Get(float32)
        self.b_acc = TBuf(TPosition.VECCALC)
        self.pipe.InitBuffer(self.b_acc, _bytes_v1(tile, 4))
        self.acc = self.b_acc.Get(float32)
        self.b_acc2 = TBuf(TPosition.VECCALC)
        self.pipe.InitBuffer(self.b_acc2, _bytes_v1(tile, 4))
        self.acc2 = self.b_acc2.Get(float32)
        self.b_red = TBuf(TPosition.VECCALC)
        self.pipe.InitBuffer(self.b_red, 64)
        self.red = self.b_red.Get(float32)
        self.b_work = TBuf(TPosition.VECCALC)
        self.pipe.InitBuffer(self.b_work, 1024)
        self.work = self.b_work.Get(float32)
        self.gw = GlobalTensor()
        self.gw.SetGlobalBuffer(w, 0, C)
        self.qw = TQue(TPosition.VECIN, 1)
        self.pipe.InitBuffer(self.qw, 1, _bytes_v1(tile, 2))
        self.b_wc = TBuf(TPosition.VECCALC)
        self.pipe.InitBuffer(self.b_wc, _bytes_v1(tile, 4))
        self.wc = self.b_wc.Get(float32)
        self.gb = GlobalTensor()
        self.gb.SetGlobalBuffer(b, 0, C)
        self.qb = TQue(TPosition.VECIN, 1)
        self.pipe.InitBuffer(self.qb, 1, _bytes_v1(tile, 2))
        self.b_bc = TBuf(TPosition.VECCALC)
        self.pipe.InitBuffer(self.b_bc, _bytes_v1(tile, 4))
        self.bc = self.b_bc.Get(float32)
        if not self.wide:
            self.LoadParam(self.qw, self.gw, self.wc, 0, C)
            self.LoadParam(self.qb, self.gb, self.bc, 0, C)

    def Process(self):
        if self.wide:
            for r in range(self.r0, self.r1):
                self.ProcessLongRow(r)
            return
        # The row loop stalls the scalar unit on each reduction result, so the next
        # tile's copy is issued before this tile's compute (software prefetch).
        r0 = self.r0
        if r0 < self.r1:
            self.CopyIn(r0 * self.C, min(self.rpt, self.r1 - r0), self.C)
        while r0 < self.r1:
            nr = min(self.rpt, self.r1 - r0)
            nxt = r0 + nr
            if BUFFER_NUM_v1 > 1 and nxt < self.r1:
                self.CopyIn(nxt * self.C, min(self.rpt, self.r1 - nxt), self.C)
            self.Compute(nr)
            self.CopyOut(r0, nr)
            if BUFFER_NUM_v1 == 1 and nxt < self.r1:
                self.CopyIn(nxt * self.C, min(self.rpt, self.r1 - nxt), self.C)
            r0 = nxt

    def CopyIn(self, off, nr, nc):
        x = self.qx.AllocTensor(float16)
        DataCopyPad(x, self.gx[off], DataCopyExtParams(nr, nc * 2, (self.C - nc) * 2, _gap_v1(nc, 2), 0), DataCopyPadExtParams(False, 0, 0, 0))
        self.qx.EnQue(x)

    def Compute(self, nr):
        s = (self.C + ALIGN_v1 - 1) // ALIGN_v1 * ALIGN_v1
        x = self.qx.DeQue(float16)
        Cast(self.xc, x, RoundMode.CAST_NONE, nr * s)
        self.qx.FreeTensor(x)
        for r in range(nr):
            ReduceSum(self.red, self.xc[r * s], self.work, self.C)
            SetFlag(HardEvent.V_S, 0)
            WaitFlag(HardEvent.V_S, 0)
            mean = self.red.GetValue(0)
            SetFlag(HardEvent.S_V, 0)
            WaitFlag(HardEvent.S_V, 0)
            mean = mean / self.C
            Adds(self.xc[r * s], self.xc[r * s], -mean, self.C)
            Mul(self.tmp, self.xc[r * s], self.xc[r * s], self.C)
            ReduceSum(self.red, self.tmp, self.work, self.C)
            SetFlag(HardEvent.V_S, 0)
            WaitFlag(HardEvent.V_S, 0)
            var = self.red.GetValue(0)
            SetFlag(HardEvent.S_V, 0)
            WaitFlag(HardEvent.S_V, 0)
            Muls(self.xc[r * s], self.xc[r * s], 1.0 / math.sqrt(var / self.C + 1e-05), self.C)
            Mul(self.xc[r * s], self.xc[r * s], self.wc, self.C)
            Add(self.xc[r * s], self.xc[r * s], self.bc, self.C)
        y = self.qy.AllocTensor(float16)
        Cast(y, self.xc, RoundMode.CAST_RINT, nr * s)
        self.qy.EnQue(y)

    def CopyOut(self, r0, nr):
        y = self.qy.DeQue(float16)
        DataCopyPad(self.gy[r0 * self.C], y, DataCopyExtParams(nr, self.C * 2, _gap_v1(self.C, 2), 0, 0))
        self.qy.FreeTensor(y)

    def ProcessLongRow(self, r):
        n_ch = (self.C + self.tile - 1) // self.tile
        for k in range(n_ch):
            c0 = k * self.tile
            nc = min(self.tile, self.C - c0)
            self.ChunkIn(r, c0, nc)
            Mul(self.tmp, self.xc, self.xc, nc)
            if k == 0:
                Adds(self.acc2, self.tmp, 0, nc)
            else:
                Add(self.acc2, self.acc2, self.tmp, nc)
            if k == 0:
                Adds(self.acc, self.xc, 0, nc)
            else:
                Add(self.acc, self.acc, self.xc, nc)
        ReduceSum(self.red, self.acc, self.work, min(self.tile, self.C))
        SetFlag(HardEvent.V_S, 0)
        WaitFlag(HardEvent.V_S, 0)
        mean = self.red.GetValue(0)
        SetFlag(HardEvent.S_V, 0)
        WaitFlag(HardEvent.S_V, 0)
        ReduceSum(self.red, self.acc2, self.work, min(self.tile, self.C))
        SetFlag(HardEvent.V_S, 0)
        WaitFlag(HardEvent.V_S, 0)
        sq = self.red.GetValue(0)
        SetFlag(HardEvent.S_V, 0)
        WaitFlag(HardEvent.S_V, 0)
        mean = mean / self.C
        rstd = 1.0 / math.sqrt(max(sq / self.C - mean * mean, 0.0) + 1e-05)
        for k in range(n_ch):
            c0 = k * self.tile
            nc = min(self.tile, self.C - c0)
            self.ChunkIn(r, c0, nc)
            Adds(self.xc, self.xc, -mean, nc)
            Muls(self.xc, self.xc, rstd, nc)
            self.LoadParam(self.qw, self.gw, self.wc, c0, nc)
            Mul(self.xc, self.xc, self.wc, nc)
            self.LoadParam(self.qb, self.gb, self.bc, c0, nc)
            Add(self.xc, self.xc, self.bc, nc)
            self.ChunkOut(r, c0, nc)

    def ChunkIn(self, r, c0, nc):
        self.CopyIn(r * self.C + c0, 1, nc)
        x = self.qx.DeQue(float16)
        Cast(self.xc, x, RoundMode.CAST_NONE, nc)
        self.qx.FreeTensor(x)

    def ChunkOut(self, r, c0, nc):
        y = self.qy.AllocTensor(float16)
        Cast(y, self.xc, RoundMode.CAST_RINT, nc)
        self.qy.EnQue(y)
        y = self.qy.DeQue(float16)
        DataCopyPad(self.gy[r * self.C + c0], y, DataCopyExtParams(1, nc * 2, 0, 0, 0))
        self.qy.FreeTensor(y)

    def LoadParam(self, q, g, dst, c0, nc):
        p = q.AllocTensor(float16)
        DataCopyPad(p, g[c0], DataCopyExtParams(1, nc * 2, 0, 0, 0), DataCopyPadExtParams(False, 0, 0, 0))
        q.EnQue(p)
        p = q.DeQue(float16)
        Cast(dst, p, RoundMode.CAST_NONE, nc)
        q.FreeTensor(p)


def _bytes_v1(elems, size):
    return (elems * size + 31) // 32 * 32


def _gap_v1(nc, size):
    # UB gap between rows, in 32 B blocks, so that every row starts at a multiple of ALIGN_v1 elements.
    return ((nc + ALIGN_v1 - 1) // ALIGN_v1 * ALIGN_v1 * size - (nc * size + 31) // 32 * 32) // 32


@kernel
def row_kernel_v1(x, w, b, y, R, C, rpt, rpb, tile):
    op = KernelRow_v1()
    op.Init(x, w, b, y, R, C, rpt, rpb, tile)
    op.Process()


def row_launch_v1(x, w, b, y, R, C):
    cores = BLOCK_DIM_v1 or CORES_v1
    tile = TILE_v1
    stride = (C + ALIGN_v1 - 1) // ALIGN_v1 * ALIGN_v1
    rpb = (R + cores - 1) // cores
    rpt = max(1, min(tile // stride, rpb)) if stride <= tile else 1
    block_dim = (R + rpb - 1) // rpb
    row_kernel_v1[block_dim](x, w, b, y, R, C, rpt, rpb, tile)


def forward_v1(x, w, b):
    C = x.shape[-1]
    R = x.numel() // C
    y = empty(x.shape, float16)
    row_launch_v1(x, w, b, y, R, C)
    return y


# row: last-axis layer_norm of bfloat16 rows, compute in float32
BUFFER_NUM_v2 = 2
TILE_LEN_v2 = 4096
CORES_v2 = 48
BLOCK_DIM_v2 = None
ALIGN_v2 = 16
# UB: 194048 bytes for tiles at 36 bytes per tile element
TILE_v2 = 4096


class KernelRow_v2:
    def Init(self, x, w, b, y, R, C, rpt, rpb, tile):
        self.R = R
        self.C = C
        self.rpt = rpt
        self.tile = tile
        self.r0 = GetBlockIdx() * rpb
        self.r1 = min(R, self.r0 + rpb)
        self.wide = (C + ALIGN_v2 - 1) // ALIGN_v2 * ALIGN_v2 > tile
        self.pipe = TPipe()
        self.gx = GlobalTensor()
        self.gx.SetGlobalBuffer(x, 0, R * C)
        self.gy = GlobalTensor()
        self.gy.SetGlobalBuffer(y, 0, R * C)
        self.qx = TQue(TPosition.VECIN, BUFFER_NUM_v2)
        self.pipe.InitBuffer(self.qx, BUFFER_NUM_v2, _bytes_v2(tile, 2))
        self.qy = TQue(TPosition.VECOUT, BUFFER_NUM_v2)
        self.pipe.InitBuffer(self.qy, BUFFER_NUM_v2, _bytes_v2(tile, 2))
        self.b_xc = TBuf(TPosition.VECCALC)
        self.pipe.InitBuffer(self.b_xc, _bytes_v2(tile, 4))
        self.xc = self.b_xc.Get(float32)
        self.b_tmp = TBuf(TPosition.VECCALC)
        self.pipe.InitBuffer(self.b_tmp, _bytes_v2(tile, 4))
        self.tmp = self.b_tmp.Get(float32)
        self.b_acc = TBuf(TPosition.VECCALC)
        self.pipe.InitBuffer(self.b_acc, _bytes_v2(tile, 4))
        self.acc = self.b_acc.Get(float32)
        self.b_acc2 = TBuf(TPosition.VECCALC)
        self.pipe.InitBuffer(self.b_acc2, _bytes_v2(tile, 4))
        self.acc2 = self.b_acc2.Get(float32)
        self.b_red = TBuf(TPosition.VECCALC)
        self.pipe.InitBuffer(self.b_red, 64)
        self.red = self.b_red.Get(float32)
        self.b_work = TBuf(TPosition.VECCALC)
        self.pipe.InitBuffer(self.b_work, 1024)
        self.work = self.b_work.Get(float32)
        self.gw = GlobalTensor()
        self.gw.SetGlobalBuffer(w, 0, C)
        self.qw = TQue(TPosition.VECIN, 1)
        self.pipe.InitBuffer(self.qw, 1, _bytes_v2(tile, 2))
        self.b_wc = TBuf(TPosition.VECCALC)
        self.pipe.InitBuffer(self.b_wc, _bytes_v2(tile, 4))
        self.wc = self.b_wc.Get(float32)
        self.gb = GlobalTensor()
        self.gb.SetGlobalBuffer(b, 0, C)
        self.qb = TQue(TPosition.VECIN, 1)
        self.pipe.InitBuffer(self.qb, 1, _bytes_v2(tile, 2))
        self.b_bc = TBuf(TPosition.VECCALC)
        self.pipe.InitBuffer(self.b_bc, _bytes_v2(tile, 4))
        self.bc = self.b_bc.Get(float32)
        if not self.wide:
            self.LoadParam(self.qw, self.gw, self.wc, 0, C)
            self.LoadParam(self.qb, self.gb, self.bc, 0, C)

    def Process(self):
        if self.wide:
            for r in range(self.r0, self.r1):
                self.ProcessLongRow(r)
            return
        # The row loop stalls the scalar unit on each reduction result, so the next
        # tile's copy is issued before this tile's compute (software prefetch).
        r0 = self.r0
        if r0 < self.r1:
            self.CopyIn(r0 * self.C, min(self.rpt, self.r1 - r0), self.C)
        while r0 < self.r1:
            nr = min(self.rpt, self.r1 - r0)
            nxt = r0 + nr
            if BUFFER_NUM_v2 > 1 and nxt < self.r1:
                self.CopyIn(nxt * self.C, min(self.rpt, self.r1 - nxt), self.C)
            self.Compute(nr)
            self.CopyOut(r0, nr)
            if BUFFER_NUM_v2 == 1 and nxt < self.r1:
                self.CopyIn(nxt * self.C, min(self.rpt, self.r1 - nxt), self.C)
            r0 = nxt

    def CopyIn(self, off, nr, nc):
        x = self.qx.AllocTensor(bfloat16)
        DataCopyPad(x, self.gx[off], DataCopyExtParams(nr, nc * 2, (self.C - nc) * 2, _gap_v2(nc, 2), 0), DataCopyPadExtParams(False, 0, 0, 0))
        self.qx.EnQue(x)

    def Compute(self, nr):
        s = (self.C + ALIGN_v2 - 1) // ALIGN_v2 * ALIGN_v2
        x = self.qx.DeQue(bfloat16)
        Cast(self.xc, x, RoundMode.CAST_NONE, nr * s)
        self.qx.FreeTensor(x)
        for r in range(nr):
            ReduceSum(self.red, self.xc[r * s], self.work, self.C)
            SetFlag(HardEvent.V_S, 0)
            WaitFlag(HardEvent.V_S, 0)
            mean = self.red.GetValue(0)
            SetFlag(HardEvent.S_V, 0)
            WaitFlag(HardEvent.S_V, 0)
            mean = mean / self.C
            Adds(self.xc[r * s], self.xc[r * s], -mean, self.C)
            Mul(self.tmp, self.xc[r * s], self.xc[r * s], self.C)
            ReduceSum(self.red, self.tmp, self.work, self.C)
            SetFlag(HardEvent.V_S, 0)
            WaitFlag(HardEvent.V_S, 0)
            var = self.red.GetValue(0)
            SetFlag(HardEvent.S_V, 0)
            WaitFlag(HardEvent.S_V, 0)
            Muls(self.xc[r * s], self.xc[r * s], 1.0 / math.sqrt(var / self.C + 1e-05), self.C)
            Mul(self.xc[r * s], self.xc[r * s], self.wc, self.C)
            Add(self.xc[r * s], self.xc[r * s], self.bc, self.C)
        y = self.qy.AllocTensor(bfloat16)
        Cast(y, self.xc, RoundMode.CAST_RINT, nr * s)
        self.qy.EnQue(y)

    def CopyOut(self, r0, nr):
        y = self.qy.DeQue(bfloat16)
        DataCopyPad(self.gy[r0 * self.C], y, DataCopyExtParams(nr, self.C * 2, _gap_v2(self.C, 2), 0, 0))
        self.qy.FreeTensor(y)

    def ProcessLongRow(self, r):
        n_ch = (self.C + self.tile - 1) // self.tile
        for k in range(n_ch):
            c0 = k * self.tile
            nc = min(self.tile, self.C - c0)
            self.ChunkIn(r, c0, nc)
            Mul(self.tmp, self.xc, self.xc, nc)
            if k == 0:
                Adds(self.acc2, self.tmp, 0, nc)
            else:
                Add(self.acc2, self.acc2, self.tmp, nc)
            if k == 0:
                Adds(self.acc, self.xc, 0, nc)
            else:
                Add(self.acc, self.acc, self.xc, nc)
        ReduceSum(self.red, self.acc, self.work, min(self.tile, self.C))
        SetFlag(HardEvent.V_S, 0)
        WaitFlag(HardEvent.V_S, 0)
        mean = self.red.GetValue(0)
        SetFlag(HardEvent.S_V, 0)
        WaitFlag(HardEvent.S_V, 0)
        ReduceSum(self.red, self.acc2, self.work, min(self.tile, self.C))
        SetFlag(HardEvent.V_S, 0)
        WaitFlag(HardEvent.V_S, 0)
        sq = self.red.GetValue(0)
        SetFlag(HardEvent.S_V, 0)
        WaitFlag(HardEvent.S_V, 0)
        mean = mean / self.C
        rstd = 1.0 / math.sqrt(max(sq / self.C - mean * mean, 0.0) + 1e-05)
        for k in range(n_ch):
            c0 = k * self.tile
            nc = min(self.tile, self.C - c0)
            self.ChunkIn(r, c0, nc)
            Adds(self.xc, self.xc, -mean, nc)
            Muls(self.xc, self.xc, rstd, nc)
            self.LoadParam(self.qw, self.gw, self.wc, c0, nc)
            Mul(self.xc, self.xc, self.wc, nc)
            self.LoadParam(self.qb, self.gb, self.bc, c0, nc)
            Add(self.xc, self.xc, self.bc, nc)
            self.ChunkOut(r, c0, nc)

    def ChunkIn(self, r, c0, nc):
        self.CopyIn(r * self.C + c0, 1, nc)
        x = self.qx.DeQue(bfloat16)
        Cast(self.xc, x, RoundMode.CAST_NONE, nc)
        self.qx.FreeTensor(x)

    def ChunkOut(self, r, c0, nc):
        y = self.qy.AllocTensor(bfloat16)
        Cast(y, self.xc, RoundMode.CAST_RINT, nc)
        self.qy.EnQue(y)
        y = self.qy.DeQue(bfloat16)
        DataCopyPad(self.gy[r * self.C + c0], y, DataCopyExtParams(1, nc * 2, 0, 0, 0))
        self.qy.FreeTensor(y)

    def LoadParam(self, q, g, dst, c0, nc):
        p = q.AllocTensor(bfloat16)
        DataCopyPad(p, g[c0], DataCopyExtParams(1, nc * 2, 0, 0, 0), DataCopyPadExtParams(False, 0, 0, 0))
        q.EnQue(p)
        p = q.DeQue(bfloat16)
        Cast(dst, p, RoundMode.CAST_NONE, nc)
        q.FreeTensor(p)


def _bytes_v2(elems, size):
    return (elems * size + 31) // 32 * 32


def _gap_v2(nc, size):
    # UB gap between rows, in 32 B blocks, so that every row starts at a multiple of ALIGN_v2 elements.
    return ((nc + ALIGN_v2 - 1) // ALIGN_v2 * ALIGN_v2 * size - (nc * size + 31) // 32 * 32) // 32


@kernel
def row_kernel_v2(x, w, b, y, R, C, rpt, rpb, tile):
    op = KernelRow_v2()
    op.Init(x, w, b, y, R, C, rpt, rpb, tile)
    op.Process()


def row_launch_v2(x, w, b, y, R, C):
    cores = BLOCK_DIM_v2 or CORES_v2
    tile = TILE_v2
    stride = (C + ALIGN_v2 - 1) // ALIGN_v2 * ALIGN_v2
    rpb = (R + cores - 1) // cores
    rpt = max(1, min(tile // stride, rpb)) if stride <= tile else 1
    block_dim = (R + rpb - 1) // rpb
    row_kernel_v2[block_dim](x, w, b, y, R, C, rpt, rpb, tile)


def forward_v2(x, w, b):
    C = x.shape[-1]
    R = x.numel() // C
    y = empty(x.shape, bfloat16)
    row_launch_v2(x, w, b, y, R, C)
    return y


# row: last-axis layer_norm of float32 rows, compute in float32
BUFFER_NUM_v3 = 2
TILE_LEN_v3 = 4096
CORES_v3 = 48
BLOCK_DIM_v3 = None
ALIGN_v3 = 8
# UB: 194048 bytes for tiles at 48 bytes per tile element
TILE_v3 = 4040


class KernelRow_v3:
    def Init(self, x, w, b, y, R, C, rpt, rpb, tile):
        self.R = R
        self.C = C
        self.rpt = rpt
        self.tile = tile
        self.r0 = GetBlockIdx() * rpb
        self.r1 = min(R, self.r0 + rpb)
        self.wide = (C + ALIGN_v3 - 1) // ALIGN_v3 * ALIGN_v3 > tile
        self.pipe = TPipe()
        self.gx = GlobalTensor()
        self.gx.SetGlobalBuffer(x, 0, R * C)
        self.gy = GlobalTensor()
        self.gy.SetGlobalBuffer(y, 0, R * C)
        self.qx = TQue(TPosition.VECIN, BUFFER_NUM_v3)
        self.pipe.InitBuffer(self.qx, BUFFER_NUM_v3, _bytes_v3(tile, 4))
        self.qy = TQue(TPosition.VECOUT, BUFFER_NUM_v3)
        self.pipe.InitBuffer(self.qy, BUFFER_NUM_v3, _bytes_v3(tile, 4))
        self.b_xc = TBuf(TPosition.VECCALC)
        self.pipe.InitBuffer(self.b_xc, _bytes_v3(tile, 4))
        self.xc = self.b_xc.Get(float32)
        self.b_tmp = TBuf(TPosition.VECCALC)
        self.pipe.InitBuffer(self.b_tmp, _bytes_v3(tile, 4))
        self.tmp = self.b_tmp.Get(float32)
        self.b_acc = TBuf(TPosition.VECCALC)
        self.pipe.InitBuffer(self.b_acc, _bytes_v3(tile, 4))
        self.acc = self.b_acc.Get(float32)
        self.b_acc2 = TBuf(TPosition.VECCALC)
        self.pipe.InitBuffer(self.b_acc2, _bytes_v3(tile, 4))
        self.acc2 = self.b_acc2.Get(float32)
        self.b_red = TBuf(TPosition.VECCALC)
        self.pipe.InitBuffer(self.b_red, 64)
        self.red = self.b_red.Get(float32)
        self.b_work = TBuf(TPosition.VECCALC)
        self.pipe.InitBuffer(self.b_work, 1024)
        self.work = self.b_work.Get(float32)
        self.gw = GlobalTensor()
        self.gw.SetGlobalBuffer(w, 0, C)
        self.qw = TQue(TPosition.VECIN, 1)
        self.pipe.InitBuffer(self.qw, 1, _bytes_v3(tile, 4))
        self.b_wc = TBuf(TPosition.VECCALC)
        self.pipe.InitBuffer(self.b_wc, _bytes_v3(tile, 4))
        self.wc = self.b_wc.Get(float32)
        self.gb = GlobalTensor()
        self.gb.SetGlobalBuffer(b, 0, C)
        self.qb = TQue(TPosition.VECIN, 1)
        self.pipe.InitBuffer(self.qb, 1, _bytes_v3(tile, 4))
        self.b_bc = TBuf(TPosition.VECCALC)
        self.pipe.InitBuffer(self.b_bc, _bytes_v3(tile, 4))
        self.bc = self.b_bc.Get(float32)
        if not self.wide:
            self.LoadParam(self.qw, self.gw, self.wc, 0, C)
            self.LoadParam(self.qb, self.gb, self.bc, 0, C)

    def Process(self):
        if self.wide:
            for r in range(self.r0, self.r1):
                self.ProcessLongRow(r)
            return
        # The row loop stalls the scalar unit on each reduction result, so the next
        # tile's copy is issued before this tile's compute (software prefetch).
        r0 = self.r0
        if r0 < self.r1:
            self.CopyIn(r0 * self.C, min(self.rpt, self.r1 - r0), self.C)
        while r0 < self.r1:
            nr = min(self.rpt, self.r1 - r0)
            nxt = r0 + nr
            if BUFFER_NUM_v3 > 1 and nxt < self.r1:
                self.CopyIn(nxt * self.C, min(self.rpt, self.r1 - nxt), self.C)
            self.Compute(nr)
            self.CopyOut(r0, nr)
            if BUFFER_NUM_v3 == 1 and nxt < self.r1:
                self.CopyIn(nxt * self.C, min(self.rpt, self.r1 - nxt), self.C)
            r0 = nxt

    def CopyIn(self, off, nr, nc):
        x = self.qx.AllocTensor(float32)
        DataCopyPad(x, self.gx[off], DataCopyExtParams(nr, nc * 4, (self.C - nc) * 4, _gap_v3(nc, 4), 0), DataCopyPadExtParams(False, 0, 0, 0))
        self.qx.EnQue(x)

    def Compute(self, nr):
        s = (self.C + ALIGN_v3 - 1) // ALIGN_v3 * ALIGN_v3
        x = self.qx.DeQue(float32)
        Adds(self.xc, x, 0, nr * s)
        self.qx.FreeTensor(x)
        for r in range(nr):
            ReduceSum(self.red, self.xc[r * s], self.work, self.C)
            SetFlag(HardEvent.V_S, 0)
            WaitFlag(HardEvent.V_S, 0)
            mean = self.red.GetValue(0)
            SetFlag(HardEvent.S_V, 0)
            WaitFlag(HardEvent.S_V, 0)
            mean = mean / self.C
            Adds(self.xc[r * s], self.xc[r * s], -mean, self.C)
            Mul(self.tmp, self.xc[r * s], self.xc[r * s], self.C)
            ReduceSum(self.red, self.tmp, self.work, self.C)
            SetFlag(HardEvent.V_S, 0)
            WaitFlag(HardEvent.V_S, 0)
            var = self.red.GetValue(0)
            SetFlag(HardEvent.S_V, 0)
            WaitFlag(HardEvent.S_V, 0)
            Muls(self.xc[r * s], self.xc[r * s], 1.0 / math.sqrt(var / self.C + 1e-06), self.C)
            Mul(self.xc[r * s], self.xc[r * s], self.wc, self.C)
            Add(self.xc[r * s], self.xc[r * s], self.bc, self.C)
        y = self.qy.AllocTensor(float32)
        Adds(y, self.xc, 0, nr * s)
        self.qy.EnQue(y)

    def CopyOut(self, r0, nr):
        y = self.qy.DeQue(float32)
        DataCopyPad(self.gy[r0 * self.C], y, DataCopyExtParams(nr, self.C * 4, _gap_v3(self.C, 4), 0, 0))
        self.qy.FreeTensor(y)

    def ProcessLongRow(self, r):
        n_ch = (self.C + self.tile - 1) // self.tile
        for k in range(n_ch):
            c0 = k * self.tile
            nc = min(self.tile, self.C - c0)
            self.ChunkIn(r, c0, nc)
            Mul(self.tmp, self.xc, self.xc, nc)
            if k == 0:
                Adds(self.acc2, self.tmp, 0, nc)
            else:
                Add(self.acc2, self.acc2, self.tmp, nc)
            if k == 0:
                Adds(self.acc, self.xc, 0, nc)
            else:
                Add(self.acc, self.acc, self.xc, nc)
        ReduceSum(self.red, self.acc, self.work, min(self.tile, self.C))
        SetFlag(HardEvent.V_S, 0)
        WaitFlag(HardEvent.V_S, 0)
        mean = self.red.GetValue(0)
        SetFlag(HardEvent.S_V, 0)
        WaitFlag(HardEvent.S_V, 0)
        ReduceSum(self.red, self.acc2, self.work, min(self.tile, self.C))
        SetFlag(HardEvent.V_S, 0)
        WaitFlag(HardEvent.V_S, 0)
        sq = self.red.GetValue(0)
        SetFlag(HardEvent.S_V, 0)
        WaitFlag(HardEvent.S_V, 0)
        mean = mean / self.C
        rstd = 1.0 / math.sqrt(max(sq / self.C - mean * mean, 0.0) + 1e-06)
        for k in range(n_ch):
            c0 = k * self.tile
            nc = min(self.tile, self.C - c0)
            self.ChunkIn(r, c0, nc)
            Adds(self.xc, self.xc, -mean, nc)
            Muls(self.xc, self.xc, rstd, nc)
            self.LoadParam(self.qw, self.gw, self.wc, c0, nc)
            Mul(self.xc, self.xc, self.wc, nc)
            self.LoadParam(self.qb, self.gb, self.bc, c0, nc)
            Add(self.xc, self.xc, self.bc, nc)
            self.ChunkOut(r, c0, nc)

    def ChunkIn(self, r, c0, nc):
        self.CopyIn(r * self.C + c0, 1, nc)
        x = self.qx.DeQue(float32)
        Adds(self.xc, x, 0, nc)
        self.qx.FreeTensor(x)

    def ChunkOut(self, r, c0, nc):
        y = self.qy.AllocTensor(float32)
        Adds(y, self.xc, 0, nc)
        self.qy.EnQue(y)
        y = self.qy.DeQue(float32)
        DataCopyPad(self.gy[r * self.C + c0], y, DataCopyExtParams(1, nc * 4, 0, 0, 0))
        self.qy.FreeTensor(y)

    def LoadParam(self, q, g, dst, c0, nc):
        p = q.AllocTensor(float32)
        DataCopyPad(p, g[c0], DataCopyExtParams(1, nc * 4, 0, 0, 0), DataCopyPadExtParams(False, 0, 0, 0))
        q.EnQue(p)
        p = q.DeQue(float32)
        Adds(dst, p, 0, nc)
        q.FreeTensor(p)


def _bytes_v3(elems, size):
    return (elems * size + 31) // 32 * 32


def _gap_v3(nc, size):
    # UB gap between rows, in 32 B blocks, so that every row starts at a multiple of ALIGN_v3 elements.
    return ((nc + ALIGN_v3 - 1) // ALIGN_v3 * ALIGN_v3 * size - (nc * size + 31) // 32 * 32) // 32


@kernel
def row_kernel_v3(x, w, b, y, R, C, rpt, rpb, tile):
    op = KernelRow_v3()
    op.Init(x, w, b, y, R, C, rpt, rpb, tile)
    op.Process()


def row_launch_v3(x, w, b, y, R, C):
    cores = BLOCK_DIM_v3 or CORES_v3
    tile = TILE_v3
    stride = (C + ALIGN_v3 - 1) // ALIGN_v3 * ALIGN_v3
    rpb = (R + cores - 1) // cores
    rpt = max(1, min(tile // stride, rpb)) if stride <= tile else 1
    block_dim = (R + rpb - 1) // rpb
    row_kernel_v3[block_dim](x, w, b, y, R, C, rpt, rpb, tile)


def forward_v3(x, w, b):
    C = x.shape[-1]
    R = x.numel() // C
    y = empty(x.shape, float32)
    row_launch_v3(x, w, b, y, R, C)
    return y

def forward(*args, **params):
    if args[0].dtype == float32 and args[0].shape == (4096, 1024) and args[1].dtype == float32 and args[1].shape == (1024,) and args[2].dtype == float32 and args[2].shape == (1024,):
        return forward_v0(args[0], args[1], args[2]).view((4096, 1024))
    if args[0].dtype == float16 and args[0].shape == (4096, 1024) and args[1].dtype == float16 and args[1].shape == (1024,) and args[2].dtype == float16 and args[2].shape == (1024,):
        return forward_v1(args[0], args[1], args[2]).view((4096, 1024))
    if args[0].dtype == bfloat16 and args[0].shape == (1000, 301) and args[1].dtype == bfloat16 and args[1].shape == (301,) and args[2].dtype == bfloat16 and args[2].shape == (301,):
        return forward_v2(args[0], args[1], args[2]).view((1000, 301))
    if args[0].dtype == float32 and args[0].shape == (64, 2117) and args[1].dtype == float32 and args[1].shape == (2117,) and args[2].dtype == float32 and args[2].shape == (2117,):
        return forward_v3(args[0], args[1], args[2]).view((64, 2117))
    raise ValueError('no library variant for these inputs: this file covers the task cases only')
