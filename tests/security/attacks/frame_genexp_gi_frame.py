# class: frame walk
# tries: a generator expression's gi_frame.f_back.f_globals: the frame of the evaluator that called forward()
# expect: refused SandboxError

from sage.npu.ascendc import *


def forward(x, canary, port):
    g = (i for i in range(3))
    caller = g.gi_frame.f_back.f_back
    print(caller.f_globals)
    return empty_like(x)
