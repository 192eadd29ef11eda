# class: parent denial of service
# tries: a million empty() calls, each an allocation in the trace header the parent reads (before the caps: 45-51 s, then a malformed reply, "trace header of 12000090 bytes is out of range")
# expect: refused KernelResourceError

from sage.npu.ascendc import *


def forward(x, canary, port):
    for i in range(1000000):
        t = empty([8], float32)
    return empty_like(x)
