"""Micro-benchmark: copy-in, compute, copy-out with separate VECIN and VECOUT queues (the
the Ascend C structure), BUFFER_NUM buffers each. The compute is `muls` Muls over a 16 KB tile,
so its length can be matched to the copies.

forward(x, muls): x is fp32, a multiple of TILE elements; runs on one block.
"""

from sage.npu.ascendc import *

BUFFER_NUM = 1
TILE = 4096


class KernelStages:
    def Init(self, x, y, tiles, muls):
        self.tiles = tiles
        self.muls = muls
        self.x_gm = GlobalTensor()
        self.x_gm.SetGlobalBuffer(x, 0, TILE * tiles)
        self.y_gm = GlobalTensor()
        self.y_gm.SetGlobalBuffer(y, 0, TILE * tiles)
        self.pipe = TPipe()
        self.in_x = TQue(TPosition.VECIN, BUFFER_NUM)
        self.out_y = TQue(TPosition.VECOUT, BUFFER_NUM)
        self.pipe.InitBuffer(self.in_x, BUFFER_NUM, TILE * 4)
        self.pipe.InitBuffer(self.out_y, BUFFER_NUM, TILE * 4)

    def Process(self):
        for i in range(self.tiles):
            self.CopyIn(i)
            self.Compute()
            self.CopyOut(i)

    def CopyIn(self, i):
        x = self.in_x.AllocTensor(float32)
        DataCopy(x, self.x_gm[i * TILE], TILE)
        self.in_x.EnQue(x)

    def Compute(self):
        x = self.in_x.DeQue(float32)
        y = self.out_y.AllocTensor(float32)
        Muls(y, x, 0.5, TILE)
        for _ in range(self.muls - 1):
            Muls(y, y, 1.0, TILE)
        self.out_y.EnQue(y)
        self.in_x.FreeTensor(x)

    def CopyOut(self, i):
        y = self.out_y.DeQue(float32)
        DataCopy(self.y_gm[i * TILE], y, TILE)
        self.out_y.FreeTensor(y)


@kernel
def stages(x, y, tiles, muls):
    op = KernelStages()
    op.Init(x, y, tiles, muls)
    op.Process()


def forward(x, muls):
    y = empty_like(x)
    stages[1](x, y, x.numel() // TILE, muls)
    return y
