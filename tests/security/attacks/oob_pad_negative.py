# class: strided out of bounds
# tries: DataCopyPad with negative paddings, shrinking the UB row below the copied bytes
# expect: refused KernelRuntimeError|BoundsError

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
    DataCopyPad(t, xg, DataCopyExtParams(4, 64, 0, 0, 0), DataCopyPadExtParams(True, -8, 0, 0.0))

def forward(x, canary, port):
    z = empty_like(x)
    k[1](x, z, x.numel())
    return z
