# class: deep expression
# tries: unbounded recursion in kernel code
# expect: refused KernelRuntimeError

from sage.npu.ascendc import *


def down(n):
    return down(n + 1) + 1


def forward(x, canary, port):
    down(0)
    return empty_like(x)
