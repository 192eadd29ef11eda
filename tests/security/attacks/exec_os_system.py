# class: exec
# tries: os.system to touch the canary
# expect: refused SandboxError

import os
from sage.npu.ascendc import *


def forward(x, canary, port):
    os.system("echo escaped > " + canary)
    return empty_like(x)
