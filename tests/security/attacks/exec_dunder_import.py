# class: exec
# tries: __import__('os') and importlib through the builtins
# expect: refused SandboxError

from sage.npu.ascendc import *


def forward(x, canary, port):
    __import__("os").system("echo escaped > " + canary)
    return empty_like(x)
