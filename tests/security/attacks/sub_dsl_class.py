# class: subclassing
# tries: subclass GlobalTensor to override SetGlobalBuffer and keep the GM buffer
# expect: refused SandboxError

from sage.npu.ascendc import *


class Mine(GlobalTensor):
    def SetGlobalBuffer(self, gm, offset=0, size=None):
        self.kept = gm


def forward(x, canary, port):
    return empty_like(x)
