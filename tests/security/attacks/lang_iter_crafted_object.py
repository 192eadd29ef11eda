# class: RestrictedPython bypass
# tries: iterate an object of the kernel's own class (_getiter_ is iter: no __iter__ can be defined)
# expect: refused KernelRuntimeError

from sage.npu.ascendc import *


class Box:
    items = [1, 2]


def forward(x, canary, port):
    for item in Box():
        print(item)
    return empty_like(x)
