# class: writable internals
# tries: a parameter struct field holding a list (a struct that carries a reference into a DSL call)
# expect: refused KernelRuntimeError

from sage.npu.ascendc import *


def forward(x, canary, port):
    p = DataCopyParams(1, 8, 0, 0)
    p.blockCount = [x]
    return empty_like(x)
