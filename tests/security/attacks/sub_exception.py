# class: subclassing
# tries: subclass Exception (its instances would carry tracebacks)
# expect: refused SandboxError

from sage.npu.ascendc import *


class Leak(Exception):
    pass


def forward(x, canary, port):
    return empty_like(x)
