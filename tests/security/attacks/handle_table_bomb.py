# class: resource bomb
# tries: mint GlobalTensor handles forever (the handle table grows until a limit)
# expect: refused MemoryLimitError|KernelTimeout

from sage.npu.ascendc import *


def forward(x, canary, port):
    keep = []
    while True:
        keep.append(GlobalTensor())
