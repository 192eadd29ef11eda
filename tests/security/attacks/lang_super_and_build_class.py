# class: RestrictedPython bypass
# tries: super() and __build_class__ to make a class with a DSL base
# expect: refused SandboxError

from sage.npu.ascendc import *


def body():
    pass


def forward(x, canary, port):
    Mine = __build_class__(body, "Mine", GlobalTensor)
    return empty_like(x)
