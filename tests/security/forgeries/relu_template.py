# The honest ReLU every forgery in test_lane_forgery.py starts from: 32 blocks, each a
# contiguous range in tiles of 8192 fp32, double buffered. PROBE and AFTER are replaced by
# each forgery's code (see the test); as written here the kernel is honest.
from sage.npu.ascendc import *

TILE = 8192
SEEN = []


class Box:
    pass


HOLDER = Box()


def relu_block(x, z, per_block):
    start = GetBlockIdx() * per_block
    xg = GlobalTensor()
    xg.SetGlobalBuffer(x, start, per_block)
    zg = GlobalTensor()
    zg.SetGlobalBuffer(z, start, per_block)
    pipe = TPipe()
    qi = TQue(TPosition.VECIN, 2)
    qo = TQue(TPosition.VECOUT, 2)
    pipe.InitBuffer(qi, 2, TILE * 4)
    pipe.InitBuffer(qo, 2, TILE * 4)
    for i in range(per_block // TILE):
        a = qi.AllocTensor(float32)
        DataCopy(a, xg[i * TILE], TILE)
        qi.EnQue(a)
        a = qi.DeQue(float32)
        b = qo.AllocTensor(float32)
        Relu(b, a, TILE)
        qo.EnQue(b)
        qi.FreeTensor(a)
        b = qo.DeQue(float32)
        DataCopy(zg[i * TILE], b, TILE)
        qo.FreeTensor(b)


def pad_block():
    # what a forged retry does instead of the work: enough instructions to look busy
    pipe = TPipe()
    t = TBuf(TPosition.VECCALC)
    pipe.InitBuffer(t, TILE * 4)
    w = t.Get(float32)
    for i in range(30):
        Duplicate(w, 0.0, TILE)


@kernel
def relu_kernel(x, z, per_block):
    b = GetBlockIdx()
    if PROBE:
        relu_block(x, z, per_block)
        AFTER
    else:
        pad_block()


def forward(x):
    z = empty_like(x)
    relu_kernel[32](x, z, x.numel() // 32)
    return z
