"""A data-dependent kernel for benchmarks/simulator_speed.py: rows whose maximum passes 1.0
are clipped to 1.0, the others copied as they are (fp32, one row at a time).

Each row's maximum is read as a scalar (ReduceMax, V_S sync, GetValue) and the kernel
branches on it, so the blocks' control flow depends on the data. Both arms are one vector
instruction on the same bytes, so a lane group of the simulator runs them under lane masks
(sage/npu/sim/masks.py) instead of splitting on every row (sage/npu/sim/lanes.py). Not an
example of a fast kernel (one scalar round trip per row).
"""

from sage.npu.ascendc import *

LIMIT = 1.0


class KernelRowClip:
    def Init(self, x, y, rows, d, per_block):
        first = per_block * GetBlockIdx()
        self.rows = max(0, min(per_block, rows - first))
        self.d = d
        self.x = GlobalTensor()
        self.x.SetGlobalBuffer(x, first * d, self.rows * d)
        self.y = GlobalTensor()
        self.y.SetGlobalBuffer(y, first * d, self.rows * d)
        self.pipe = TPipe()
        self.qi = TQue(TPosition.VECIN, 2)
        self.qo = TQue(TPosition.VECOUT, 2)
        self.pipe.InitBuffer(self.qi, 2, d * 4)
        self.pipe.InitBuffer(self.qo, 2, d * 4)
        self.work = TBuf(TPosition.VECCALC)
        self.pipe.InitBuffer(self.work, (d + 63) // 64 * 32 + 32)
        self.red = TBuf(TPosition.VECCALC)
        self.pipe.InitBuffer(self.red, 32)

    def Process(self):
        for i in range(self.rows):
            xl = self.qi.AllocTensor(float32)
            DataCopy(xl, self.x[i * self.d], self.d)
            self.qi.EnQue(xl)
            xl = self.qi.DeQue(float32)
            r = self.red.Get(float32)
            ReduceMax(r, xl, self.work.Get(float32), self.d)
            SetFlag(HardEvent.V_S, 0)
            WaitFlag(HardEvent.V_S, 0)
            yl = self.qo.AllocTensor(float32)
            if r.GetValue(0) > LIMIT:
                Mins(yl, xl, LIMIT, self.d)
            else:
                Adds(yl, xl, 0.0, self.d)
            self.qo.EnQue(yl)
            self.qi.FreeTensor(xl)
            yl = self.qo.DeQue(float32)
            DataCopy(self.y[i * self.d], yl, self.d)
            self.qo.FreeTensor(yl)


@kernel
def row_clip(x, y, rows, d, per_block):
    op = KernelRowClip()
    op.Init(x, y, rows, d, per_block)
    op.Process()


def forward(x):
    rows, d = x.shape
    y = empty_like(x)
    per_block = (rows + 47) // 48
    row_clip[(rows + per_block - 1) // per_block](x, y, rows, d, per_block)
    return y
