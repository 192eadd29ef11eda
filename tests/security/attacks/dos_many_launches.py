# class: parent denial of service
# tries: launch an empty kernel over and over: every launch and block is an entry the parent decodes and schedules
# expect: refused KernelResourceError

from sage.npu.ascendc import *


@kernel
def k(x):
    pass


def forward(x, canary, port):
    for i in range(100000):
        k[48](x)
    return empty_like(x)
