# class: exec
# tries: the classic ().__class__.__base__.__subclasses__() walk to a class with os in its globals
# expect: refused SandboxError

from sage.npu.ascendc import *


def forward(x, canary, port):
    for c in ().__class__.__base__.__subclasses__():
        if c.__name__ == "Popen":
            c(["sh", "-c", "echo escaped > " + canary])
    return empty_like(x)
