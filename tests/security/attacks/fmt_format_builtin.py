# class: format-string walk
# tries: the format() builtin and a format spec built from an attribute, hoping a __format__ walks further
# expect: refused KernelRuntimeError

from sage.npu.ascendc import *


def forward(x, canary, port):
    spec = f"{x.shape}"
    print(format(x, spec))
    return empty_like(x)
