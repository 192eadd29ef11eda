# class: capability forging
# tries: GmHandle(fake_buffer, shape): a GM handle around a kernel object posing as the simulator's GmBuffer
# expect: refused LaunchError

from sage.npu.ascendc import *


class FakeBuffer:
    pass


def forward(x, canary, port):
    b = FakeBuffer()
    b.data = [0.0] * 16
    b.dtype = float32
    b.is_input = False
    b.id = 0
    return GmHandle(b, (16,))
