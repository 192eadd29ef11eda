# class: RestrictedPython bypass
# tries: a default argument (evaluated once) capturing the first block's LocalTensor for the block that runs second
# expect: refused LaunchError

from sage.npu.ascendc import *


class Keep:
    pass


KEEP = Keep()
KEEP.later = []


@kernel
def k(x, z):
    if GetBlockIdx() == 0:           # a branch on the block index: the two blocks run one by one (run as
        pass                         # one lane group both would take the else branch, as on the chip)
    pipe = TPipe()
    b = TBuf(TPosition.VECCALC)
    pipe.InitBuffer(b, 1024)
    if KEEP.later:                   # blocks run in a random order: whichever comes second
        KEEP.later[0]().SetValue(0, 1.0)
    else:
        t = b.Get(float32)

        def later(t=t):
            return t
        KEEP.later.append(later)


def forward(x, canary, port):
    z = empty_like(x)
    k[2](x, z)
    return z
