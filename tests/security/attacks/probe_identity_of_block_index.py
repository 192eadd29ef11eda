# class: execution-mode probe
# tries: tell a lane group from blocks run alone by object identity (small ints are shared objects block by block, a lane group's value is one object for all lanes), to do less work in the try that is timed
# expect: refused SandboxError

from sage.npu.ascendc import *


@kernel
def probe(x):
    b = GetBlockIdx()
    if b is b + 0:
        printf("blocks alone\n")


def forward(x, canary, port):
    probe[4](x)
    return empty_like(x)
