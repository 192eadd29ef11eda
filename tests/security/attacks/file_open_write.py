# class: file writes
# tries: open() the canary for writing
# expect: refused KernelRuntimeError

from sage.npu.ascendc import *


def forward(x, canary, port):
    with_open = open(canary, "w")
    with_open.write("escaped")
    return empty_like(x)
