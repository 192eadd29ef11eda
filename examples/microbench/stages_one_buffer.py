"""Micro-benchmark: copy-in, compute and copy-out through one queue whose buffers serve all
three stages (the tile is computed in place). With BUFFER_NUM = 1 the stages cannot overlap
at all: the case of the Ascend C documentation's "vector utilisation only 1/3".

A VECIN queue syncs MTE2 -> V only, so the V -> MTE3 hand-over and the MTE3 -> MTE2 one
(the next tile's copy-in overwrites the buffer the copy-out reads) are explicit flags, as
they would be in Ascend C.

forward(x, muls): x is fp32, a multiple of TILE elements; runs on one block.
"""

from sage.npu.ascendc import *

BUFFER_NUM = 1
TILE = 4096


@kernel
def stages(x, y, tiles, muls):
    x_gm = GlobalTensor()
    x_gm.SetGlobalBuffer(x, 0, TILE * tiles)
    y_gm = GlobalTensor()
    y_gm.SetGlobalBuffer(y, 0, TILE * tiles)
    pipe = TPipe()
    que = TQue(TPosition.VECIN, BUFFER_NUM)
    pipe.InitBuffer(que, BUFFER_NUM, TILE * 4)
    for i in range(tiles):
        t = que.AllocTensor(float32)
        DataCopy(t, x_gm[i * TILE], TILE)
        que.EnQue(t)
        t = que.DeQue(float32)
        for _ in range(muls):
            Muls(t, t, 0.5, TILE)
        SetFlag(HardEvent.V_MTE3, 0)
        WaitFlag(HardEvent.V_MTE3, 0)
        DataCopy(y_gm[i * TILE], t, TILE)
        SetFlag(HardEvent.MTE3_MTE2, 0)
        WaitFlag(HardEvent.MTE3_MTE2, 0)
        que.FreeTensor(t)


def forward(x, muls):
    y = empty_like(x)
    stages[1](x, y, x.numel() // TILE, muls)
    return y
