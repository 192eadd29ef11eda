# class: capability sharing
# tries: a TBuf made in forward: block 0 fills it, block 1 reads block 0's UB with no GM traffic
# expect: refused LaunchError

from sage.npu.ascendc import *


@kernel
def k(x, z, q, n):
    xg = GlobalTensor()
    xg.SetGlobalBuffer(x)
    zg = GlobalTensor()
    zg.SetGlobalBuffer(z)
    if GetBlockIdx() == 0:
        pipe = TPipe()
        pipe.InitBuffer(q, 65536)
        t = q.Get(float32)
        DataCopy(t, xg, n)
    else:
        t = q.Get(float32)
        Adds(t, t, 0.0, n)
        SetFlag(HardEvent.V_MTE3, EVENT_ID0)
        WaitFlag(HardEvent.V_MTE3, EVENT_ID0)
        DataCopy(zg, t, n)


def forward(x, canary, port):
    z = empty_like(x)
    k[2](x, z, TBuf(TPosition.VECCALC), x.numel())
    return z
