# class: underscore shadowing
# tries: a method named like a private simulator hook (_run_block) hoping to be called with the live core
# expect: refused SandboxError

from sage.npu.ascendc import *


class Hook:
    def _run_block(self, core):
        core.records.clear()


def forward(x, canary, port):
    return empty_like(x)
