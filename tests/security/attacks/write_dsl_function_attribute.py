# class: writable internals
# tries: set an attribute on a DSL function (a cost key, a counter)
# expect: refused SandboxError

from sage.npu.ascendc import *


def forward(x, canary, port):
    DataCopy.cost_key = "free"
    return empty_like(x)
