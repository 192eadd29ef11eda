# class: RestrictedPython bypass
# tries: a closure's cells (__closure__, cell_contents) and a function's defaults
# expect: refused SandboxError

from sage.npu.ascendc import *


def outer():
    secret = [1]

    def inner():
        return secret
    return inner


def forward(x, canary, port):
    print(outer().cell_contents, outer().func_defaults)
    return empty_like(x)
