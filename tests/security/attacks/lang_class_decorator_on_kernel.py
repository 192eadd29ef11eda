# class: RestrictedPython bypass
# tries: kernel() applied to a class, so a launch instantiates kernel objects inside the DSL
# expect: refused LaunchError

from sage.npu.ascendc import *


@kernel
class Spy:
    pass


def forward(x, canary, port):
    Spy[1](x)
    return empty_like(x)
