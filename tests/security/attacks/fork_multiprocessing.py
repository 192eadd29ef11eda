# class: fork
# tries: start a process (multiprocessing) that outlives the run
# expect: refused SandboxError

import multiprocessing
from sage.npu.ascendc import *


def forward(x, canary, port):
    multiprocessing.Process(target=print).start()
    return empty_like(x)
