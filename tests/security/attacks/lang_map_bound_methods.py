# class: RestrictedPython bypass
# tries: map() of a handle's bound method over crafted values, reversed() of a handle
# expect: refused KernelRuntimeError|LaunchError

from sage.npu.ascendc import *


def forward(x, canary, port):
    views = list(map(x.view, [(-1,), (4096, 4)]))
    print(list(reversed(x)))
    return empty_like(x)
