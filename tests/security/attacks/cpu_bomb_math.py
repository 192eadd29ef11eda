# class: resource bomb
# tries: math.factorial of ten million: one C call that never yields
# expect: refused KernelTimeout

import math
from sage.npu.ascendc import *


def forward(x, canary, port):
    print(math.factorial(10000000) > 1)
    return empty_like(x)
