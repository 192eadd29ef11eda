# class: underscore shadowing
# tries: __init__/__getattr__/__eq__ in a kernel class (the magic-method exception RestrictedPython makes)
# expect: refused SandboxError

from sage.npu.ascendc import *


class Spy:
    def __getattr__(self, name):
        return name

    def __eq__(self, other):
        return True


def forward(x, canary, port):
    return empty_like(x)
