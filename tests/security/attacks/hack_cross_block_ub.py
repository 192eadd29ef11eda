# class: reward hack / capability sharing
# tries: a TBuf made in forward so blocks share one UB without GM traffic
# run: evaluate tests/fixtures/tasks/relu.py
# expect: error LaunchError

from sage.npu.ascendc import *


@kernel
def k(x, z, q, n):
    xg = GlobalTensor()
    xg.SetGlobalBuffer(x)
    zg = GlobalTensor()
    zg.SetGlobalBuffer(z)
    if GetBlockIdx() == 0:
        pipe = TPipe()
        pipe.InitBuffer(q, n * 4)
        t = q.Get(float32)
        DataCopy(t, xg, n)
        SetFlag(HardEvent.MTE2_V, EVENT_ID0)
        WaitFlag(HardEvent.MTE2_V, EVENT_ID0)
        Relu(t, t, n)
    else:
        t = q.Get(float32)
        Adds(t, t, 0.0, n)
        SetFlag(HardEvent.V_MTE3, EVENT_ID0)
        WaitFlag(HardEvent.V_MTE3, EVENT_ID0)
        DataCopy(zg, t, n)


def forward(x):
    z = empty_like(x)
    k[2](x, z, TBuf(TPosition.VECCALC), x.numel())
    return z
