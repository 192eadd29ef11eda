# class: strided out of bounds
# tries: a negative stride making the GM row pitch negative (rows walk backwards)
# expect: refused BoundsError

from sage.npu.ascendc import *


@kernel
def k(x, z, n):
    xg = GlobalTensor()
    xg.SetGlobalBuffer(x)
    zg = GlobalTensor()
    zg.SetGlobalBuffer(z)
    pipe = TPipe()
    b = TBuf(TPosition.VECCALC)
    pipe.InitBuffer(b, 65536)
    t = b.Get(float32)
    DataCopy(t, xg[4096], DataCopyParams(4, 2, -4, 0))

def forward(x, canary, port):
    z = empty_like(x)
    k[1](x, z, x.numel())
    return z
