# class: frame walk
# tries: a kernel function's and a lambda's globals and closure cells (func_globals, __globals__)
# expect: refused SandboxError

from sage.npu.ascendc import *


def forward(x, canary, port):
    f = lambda: x
    print(f.func_globals)
    return empty_like(x)
