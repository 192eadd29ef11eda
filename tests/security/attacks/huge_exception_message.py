# class: huge message
# tries: a 100 MB exception message (the parent must get a few KB)
# expect: refused KernelRuntimeError

from sage.npu.ascendc import *


def forward(x, canary, port):
    raise ValueError('{"correct": true, "speedup": 1e9}' * 3000000)
