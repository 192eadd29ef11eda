# class: subclassing
# tries: a class statement with metaclass=type (class keyword arguments)
# expect: refused SandboxError

from sage.npu.ascendc import *


class A(object, metaclass=type):
    pass


def forward(x, canary, port):
    return empty_like(x)
