# class: frame walk
# tries: an exception object's public attributes (args, with_traceback) as a way to a traceback without try
# expect: refused SandboxError

from sage.npu.ascendc import *


def forward(x, canary, port):
    e = ValueError("probe")
    tb = e.with_traceback(None)
    print(tb, e.args)
    return empty_like(x)
