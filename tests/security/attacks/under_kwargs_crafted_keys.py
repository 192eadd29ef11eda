# class: underscore shadowing
# tries: the same through **{...}: keys built at run time are not names the compiler sees
# expect: refused KernelRuntimeError

from sage.npu.ascendc import *


def forward(x, canary, port):
    key = chr(95) + "hid"
    g = GlobalTensor(**{key: 1})
    return empty_like(x)
