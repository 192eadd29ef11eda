# class: writable internals
# tries: rebind math.exp (a module attribute) for code outside the kernel
# expect: refused SandboxError

import math
from sage.npu.ascendc import *


def forward(x, canary, port):
    math.exp = abs
    return empty_like(x)
