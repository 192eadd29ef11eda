# class: deep expression
# tries: repr of a list nested a million deep (recursion inside C)
# expect: refused KernelRuntimeError

from sage.npu.ascendc import *


def forward(x, canary, port):
    a = []
    for i in range(1000000):
        a = [a]
    print(repr(a)[:10])
    return empty_like(x)
