# class: RestrictedPython bypass
# tries: iterate a GlobalTensor handle (its views never end), minting handles until a limit
# expect: refused KernelTimeout|MemoryLimitError

from sage.npu.ascendc import *


@kernel
def k(x, z):
    g = GlobalTensor()
    g.SetGlobalBuffer(x)
    n = 0
    for view in g:
        n += 1


def forward(x, canary, port):
    z = empty_like(x)
    k[1](x, z)
    return z
