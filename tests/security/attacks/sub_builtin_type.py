# class: subclassing
# tries: subclass str to get a value type whose methods the guard allows by exact type
# expect: refused SandboxError

from sage.npu.ascendc import *


class S(str):
    pass


def forward(x, canary, port):
    print(S("a").format)
    return empty_like(x)
