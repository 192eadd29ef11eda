# class: strided out of bounds
# tries: Nd2NzParams whose source row pitch runs past the GM tensor (cube path)
# expect: refused BoundsError

from sage.npu.ascendc import *


@kernel
def k(x, z):
    xg = GlobalTensor()
    xg.SetGlobalBuffer(x)
    pipe = TPipe()
    q = TQue(TPosition.A1, 1)
    pipe.InitBuffer(q, 1, 65536)
    a1 = q.AllocTensor(float32)
    DataCopy(a1, xg, Nd2NzParams(1, 16, 16, 0, 2 ** 30, 16, 1, 0))


def forward(x, canary, port):
    z = empty_like(x)
    k[1](x, z)
    return z
