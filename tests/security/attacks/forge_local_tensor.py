# class: capability forging
# tries: LocalTensor(fake_slot, ...): a local tensor over a kernel object posing as a buffer slot
# expect: refused LaunchError

from sage.npu.ascendc import *


class Fake:
    pass


def forward(x, canary, port):
    slot = Fake()
    slot.space = Fake()
    slot.space.data = b"x" * 64
    slot.addr = 0
    t = LocalTensor(slot, 0, 16, float32, 0)
    return empty_like(x)
