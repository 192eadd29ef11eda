# class: subclassing
# tries: subclass a DSL enum and a parameter struct
# expect: refused SandboxError

from sage.npu.ascendc import *


class P(DataCopyParams):
    blockCount = 1


def forward(x, canary, port):
    return empty_like(x)
