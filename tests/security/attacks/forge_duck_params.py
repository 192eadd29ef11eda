# class: capability forging
# tries: a kernel object with isPad/leftPadding fields passed where DataCopyPad expects its padding struct
# expect: refused LaunchError

from sage.npu.ascendc import *


class FakePad:
    pass


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
    pad = FakePad()
    pad.isPad = True
    pad.leftPadding = -1000
    pad.rightPadding = 0
    pad.paddingValue = 0.0
    DataCopyPad(t, xg, DataCopyExtParams(1, 64, 0, 0, 0), pad)

def forward(x, canary, port):
    z = empty_like(x)
    k[1](x, z, x.numel())
    return z
