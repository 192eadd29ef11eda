# class: resource bomb
# tries: allocate until something gives (the address-space limit ends it)
# expect: refused MemoryLimitError|KernelTimeout

from sage.npu.ascendc import *


def forward(x, canary, port):
    hog = []
    while True:
        hog.append(" " * 50000000)
