"""Micro-benchmark: every block loads a tile from GM, computes on it, stores it (the issue's
HBM-sharing probe; tests/npu/test_multicore.py and benchmarks/fidelity.py time it).

forward(x, blocks, muls): block b copies its x.numel() // blocks fp32 elements GM -> UB in
one DataCopy, scales them `muls` times in place (Muls by 1.0) and copies them back out.
"""

from sage.npu.ascendc import *


@kernel
def load_compute_store(x, z, n, muls):
    pipe = TPipe()
    q = TQue(TPosition.VECIN, 1)
    pipe.InitBuffer(q, 1, n * 4)
    xg = GlobalTensor()
    xg.SetGlobalBuffer(x, n * GetBlockIdx(), n)
    zg = GlobalTensor()
    zg.SetGlobalBuffer(z, n * GetBlockIdx(), n)
    t = q.AllocTensor(float32)
    DataCopy(t, xg, n)                                   # load
    q.EnQue(t)
    t = q.DeQue(float32)
    for _ in range(muls):
        Muls(t, t, 1.0, n)                               # compute
    SetFlag(HardEvent.V_MTE3, 0)
    WaitFlag(HardEvent.V_MTE3, 0)
    DataCopy(zg, t, n)                                   # store
    q.FreeTensor(t)


def forward(x, blocks, muls):
    z = empty_like(x)
    load_compute_store[blocks](x, z, x.numel() // blocks, muls)
    return z
