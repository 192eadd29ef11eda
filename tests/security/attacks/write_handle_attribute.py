# class: writable internals
# tries: replace a GM handle's shape (and its data) from host code
# expect: refused SandboxError

from sage.npu.ascendc import *


def forward(x, canary, port):
    x.data = [0.0]
    return empty_like(x)
