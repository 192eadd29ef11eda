# class: exec
# tries: numpy through a dtype's attributes (x.dtype.type, its module)
# expect: refused SandboxError

from sage.npu.ascendc import *


def forward(x, canary, port):
    np_float = x.dtype.type
    print(np_float)
    return empty_like(x)
