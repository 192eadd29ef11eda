# class: RestrictedPython bypass
# tries: enum internals: a member's _value_, the class's _member_map_, mro()
# expect: refused SandboxError

from sage.npu.ascendc import *


def forward(x, canary, port):
    print(TPosition.VECIN.name, TPosition.VECIN.value)
    print(TPosition.mro())
    return empty_like(x)
