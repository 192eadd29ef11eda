# class: reward hack / reference copying
# tries: look for the reference outputs by name in the kernel's namespace
# run: evaluate tests/fixtures/tasks/relu.py
# expect: error KernelRuntimeError

from sage.npu.ascendc import *


def forward(x):
    return expected[0]
