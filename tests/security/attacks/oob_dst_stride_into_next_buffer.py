# class: strided out of bounds
# tries: a UB-side stride that writes past the end of the TBuf into the next buffer
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
    DataCopy(t, xg, DataCopyParams(2, 8, 0, 2047))

def forward(x, canary, port):
    z = empty_like(x)
    k[1](x, z, x.numel())
    return z
