# class: exec
# tries: getattr/type/id/vars/globals/compile/open from the builtins
# expect: refused KernelRuntimeError

from sage.npu.ascendc import *


def forward(x, canary, port):
    g = getattr(x, "view")
    print(type(x), id(x), vars(x), globals())
    return empty_like(x)
