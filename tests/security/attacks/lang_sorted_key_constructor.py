# class: RestrictedPython bypass
# tries: sorted/map with a DSL constructor as the key, applied to the kernel's own objects
# expect: refused LaunchError

from sage.npu.ascendc import *


class Fake:
    pass


def forward(x, canary, port):
    print(sorted([Fake()], key=GlobalTensor().SetGlobalBuffer))
    return empty_like(x)
