# class: writable internals
# tries: set attributes on a LocalTensor inside a kernel (its address, its array)
# expect: refused SandboxError

from sage.npu.ascendc import *


@kernel
def k(x, z):
    pipe = TPipe()
    b = TBuf(TPosition.VECCALC)
    pipe.InitBuffer(b, 1024)
    t = b.Get(float32)
    t.addr = 0


def forward(x, canary, port):
    z = empty_like(x)
    k[1](x, z)
    return z
