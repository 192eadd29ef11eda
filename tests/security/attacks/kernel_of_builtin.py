# class: exec
# tries: kernel() around a builtin or bound method, to run host callables as a block
# expect: refused LaunchError

from sage.npu.ascendc import *


def forward(x, canary, port):
    kernel(print)[1]("escaped")
    return empty_like(x)
