# class: RestrictedPython bypass
# tries: the ml_dtypes bfloat16 dtype: its scalar type, its module, its finfo
# expect: refused SandboxError

from sage.npu.ascendc import *


def forward(x, canary, port):
    print(bfloat16.name, bfloat16.itemsize)
    print(bfloat16.type)
    return empty_like(x)
