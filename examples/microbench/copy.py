"""Micro-benchmark: one DataCopy of n bytes on one core (benchmarks/fidelity.py reads its
duration from the trace).

forward(x, path): x is a uint8 tensor of n bytes; path is "GM->UB", "UB->GM", "GM->L1" or
"UB->UB" (which copies the first half of the buffer onto the second).
"""

from sage.npu.ascendc import *


@kernel
def copy(x, y, n, path):
    gx = GlobalTensor()
    gx.SetGlobalBuffer(x, 0, n)
    gy = GlobalTensor()
    gy.SetGlobalBuffer(y, 0, n)
    pipe = TPipe()
    buf = TBuf(TPosition.A1 if path == "GM->L1" else TPosition.VECCALC)
    pipe.InitBuffer(buf, n)
    t = buf.Get(uint8)
    if path in ("GM->UB", "GM->L1"):
        DataCopy(t, gx, n)
    elif path == "UB->GM":
        DataCopy(gy, t, n)
    else:
        DataCopy(t[n // 2], t, n // 2)


def forward(x, path):
    y = empty_like(x)
    copy[1](x, y, x.numel(), path)
    return y
