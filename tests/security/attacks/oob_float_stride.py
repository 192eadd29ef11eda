# class: strided out of bounds
# tries: fractional strides, hoping as_strided truncates them into a misaligned view
# expect: refused KernelRuntimeError

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
    DataCopyPad(t, xg, DataCopyExtParams(2, 64, 4.0, 0, 0), DataCopyPadExtParams(False, 0, 0, 0))

def forward(x, canary, port):
    z = empty_like(x)
    k[1](x, z, x.numel())
    return z
