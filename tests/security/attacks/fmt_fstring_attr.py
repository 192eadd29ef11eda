# class: format-string walk
# tries: an f-string whose replacement field reads a dunder attribute (f-strings compile to plain attribute reads)
# expect: refused SandboxError

from sage.npu.ascendc import *


def forward(x, canary, port):
    print(f"{x.__class__.__bases__}")
    return empty_like(x)
