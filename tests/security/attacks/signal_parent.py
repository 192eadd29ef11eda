# class: signals
# tries: signal the parent (os.kill(os.getppid(), SIGKILL))
# expect: refused SandboxError

from os import getppid, kill
from sage.npu.ascendc import *


def forward(x, canary, port):
    kill(getppid(), 9)
    return empty_like(x)
