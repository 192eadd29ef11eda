# class: resource bomb
# tries: an endless loop (the CPU and wall-clock limits end it)
# expect: refused KernelTimeout

from sage.npu.ascendc import *


def forward(x, canary, port):
    n = 0
    while True:
        n += 1
