# class: format-string walk
# tries: reach x.__class__.__init__.__globals__ through str.format's field syntax, which walks attributes in C
# expect: refused SandboxError

from sage.npu.ascendc import *


def forward(x, canary, port):
    leak = "{0.__class__.__init__.__globals__}".format(x)
    print(leak)
    return empty_like(x)
