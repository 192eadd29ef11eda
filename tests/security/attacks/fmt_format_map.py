# class: format-string walk
# tries: the same walk through str.format_map with a dict argument
# expect: refused SandboxError

from sage.npu.ascendc import *


def forward(x, canary, port):
    print("{h.shape.__class__.__mro__}".format_map({"h": x}))
    return empty_like(x)
