# class: host compute
# tries: a GlobalTensor on the host and GetValue outside any kernel (a free scalar read)
# expect: refused LaunchError

from sage.npu.ascendc import *


def forward(x, canary, port):
    g = GlobalTensor()
    g.SetGlobalBuffer(x)
    print(g.GetValue(0))
    return empty_like(x)
