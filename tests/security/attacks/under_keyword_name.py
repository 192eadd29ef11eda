# class: underscore shadowing
# tries: a keyword argument starting with _ (_hid) passed to a DSL constructor
# expect: refused SandboxError

from sage.npu.ascendc import *


def forward(x, canary, port):
    g = GlobalTensor(_hid=1)
    return empty_like(x)
