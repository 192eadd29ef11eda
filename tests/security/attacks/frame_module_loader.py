# class: frame walk
# tries: the math module's loader and its sys reference (math.__loader__.load_module('os'), math.sys)
# expect: refused SandboxError

import math
from sage.npu.ascendc import *


def forward(x, canary, port):
    os = math.sys.modules["os"]
    os.system("touch " + canary)
    return empty_like(x)
