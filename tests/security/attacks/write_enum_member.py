# class: writable internals
# tries: change an enum member's value (a pipe number)
# expect: refused SandboxError

from sage.npu.ascendc import *


def forward(x, canary, port):
    PIPE_V.value = 0
    return empty_like(x)
