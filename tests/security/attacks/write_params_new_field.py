# class: writable internals
# tries: a field a parameter struct does not have
# expect: refused KernelRuntimeError

from sage.npu.ascendc import *


def forward(x, canary, port):
    p = DataCopyParams(1, 8, 0, 0)
    p.cycles = 0
    return empty_like(x)
