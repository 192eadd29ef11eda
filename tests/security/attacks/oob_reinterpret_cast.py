# class: strided out of bounds
# tries: ReinterpretCast to a wider type, then index where the narrower view's elements would still exist
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
    u = t[16383].ReinterpretCast(int64)
    u.SetValue(1, 0)

def forward(x, canary, port):
    z = empty_like(x)
    k[1](x, z, x.numel())
    return z
