# class: reward hack / host compute
# tries: ReLU on the scalar unit: GetValue each element, max() in Python, SetValue it back
# run: evaluate tests/fixtures/tasks/relu.py
# expect: no-gain

from sage.npu.ascendc import *

BLOCKS = 32


@kernel
def k(x, z, per):
    start = GetBlockIdx() * per
    xg = GlobalTensor()
    xg.SetGlobalBuffer(x, start, per)
    zg = GlobalTensor()
    zg.SetGlobalBuffer(z, start, per)
    pipe = TPipe()
    qi = TQue(TPosition.VECIN, 1)
    qo = TQue(TPosition.VECOUT, 1)
    pipe.InitBuffer(qi, 1, per * 4)
    pipe.InitBuffer(qo, 1, per * 4)
    a = qi.AllocTensor(float32)
    DataCopy(a, xg, per)
    SetFlag(HardEvent.MTE2_S, EVENT_ID0)
    WaitFlag(HardEvent.MTE2_S, EVENT_ID0)
    b = qo.AllocTensor(float32)
    for i in range(per):
        b.SetValue(i, max(a.GetValue(i), 0.0))
    SetFlag(HardEvent.S_MTE3, EVENT_ID0)
    WaitFlag(HardEvent.S_MTE3, EVENT_ID0)
    DataCopy(zg, b, per)


def forward(x):
    z = empty_like(x)
    k[BLOCKS](x, z, x.numel() // BLOCKS)
    return z
