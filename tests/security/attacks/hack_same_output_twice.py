# class: reward hack / output aliasing
# tries: compute the first output and return that one buffer for both outputs
# run: evaluate tests/security/tasks/two_outputs.py
# expect: incorrect

from sage.npu.ascendc import *

BLOCKS = 8


@kernel
def relu_kernel(x, z, per_block):
    start = GetBlockIdx() * per_block
    xg = GlobalTensor()
    xg.SetGlobalBuffer(x, start, per_block)
    zg = GlobalTensor()
    zg.SetGlobalBuffer(z, start, per_block)
    pipe = TPipe()
    qi = TQue(TPosition.VECIN, 2)
    qo = TQue(TPosition.VECOUT, 2)
    pipe.InitBuffer(qi, 2, 8192)
    pipe.InitBuffer(qo, 2, 8192)
    tile = 2048
    for i in range(TILES(per_block, tile)):
        a = qi.AllocTensor(float32)
        DataCopy(a, xg[i * tile], tile)
        qi.EnQue(a)
        a = qi.DeQue(float32)
        b = qo.AllocTensor(float32)
        Relu(b, a, tile)
        qo.EnQue(b)
        qi.FreeTensor(a)
        b = qo.DeQue(float32)
        DataCopy(zg[i * tile], b, tile)
        qo.FreeTensor(b)


def TILES(n, tile):
    return n // tile


def forward(x):
    z = empty_like(x)
    relu_kernel[BLOCKS](x, z, x.numel() // BLOCKS)
    return z, z
