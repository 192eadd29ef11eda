# class: RestrictedPython bypass
# tries: isinstance to find the handle classes, then their class attributes (the unwrapped methods)
# expect: refused SandboxError

from sage.npu.ascendc import *


def forward(x, canary, port):
    if isinstance(x, GmHandle):
        print(GmHandle.view)
    return empty_like(x)
