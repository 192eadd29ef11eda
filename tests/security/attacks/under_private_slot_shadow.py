# class: underscore shadowing
# tries: a kernel class that defines _buf/_off like a GlobalTensor, to be mistaken for one by the DSL
# expect: refused SandboxError

from sage.npu.ascendc import *


class Fake:
    _buf = None
    _off = 0


def forward(x, canary, port):
    return empty_like(x)
