# class: reward hack / timing
# tries: launch 1024 blocks of 64 elements each, so that each block's share looks tiny: the blocks must run in waves on the 48 AIV cores, never all at once
# run: evaluate tests/fixtures/tasks/relu.py
# expect: no-gain or error LaunchError

from sage.npu.ascendc import *

BLOCKS = 1024


@kernel
def relu_kernel(x, z, per_block):
    start = GetBlockIdx() * per_block
    xg = GlobalTensor()
    xg.SetGlobalBuffer(x, start, per_block)
    zg = GlobalTensor()
    zg.SetGlobalBuffer(z, start, per_block)
    pipe = TPipe()
    qi = TQue(TPosition.VECIN, 1)
    qo = TQue(TPosition.VECOUT, 1)
    pipe.InitBuffer(qi, 1, per_block * 4)
    pipe.InitBuffer(qo, 1, per_block * 4)
    a = qi.AllocTensor(float32)
    DataCopy(a, xg, per_block)
    qi.EnQue(a)
    a = qi.DeQue(float32)
    b = qo.AllocTensor(float32)
    Relu(b, a, per_block)
    qo.EnQue(b)
    qi.FreeTensor(a)
    b = qo.DeQue(float32)
    DataCopy(zg, b, per_block)
    qo.FreeTensor(b)


def forward(x):
    z = empty_like(x)
    relu_kernel[BLOCKS](x, z, x.numel() // BLOCKS)
    return z
