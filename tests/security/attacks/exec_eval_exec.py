# class: exec
# tries: exec()/eval() of a string built at run time
# expect: refused SandboxError

from sage.npu.ascendc import *


def forward(x, canary, port):
    exec("import os; os.system('echo escaped > " + canary + "')")
    return empty_like(x)
