# class: untimed data path
# tries: dump the input tensor into the print buffer, then read it back through RestrictedPython's `printed` and parse it, so the output is computed without one GM read being timed
# expect: refused SandboxError

from sage.npu.ascendc import *


@kernel
def dump(x, n):
    xg = GlobalTensor()
    xg.SetGlobalBuffer(x, 0, n)
    DumpTensor(xg, 0, n)


def forward(x, canary, port):
    y = empty_like(x)
    dump[1](x, 64)
    text = printed
    values = [float(v) for v in text.split("[", 1)[1].split("]")[0].split(", ")]
    return y
