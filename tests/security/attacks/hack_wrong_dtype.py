# class: reward hack / cheaper arithmetic
# tries: compute in float16 and return a float16 output for a float32 task
# run: evaluate tests/fixtures/tasks/relu.py
# expect: error OutputSpecError

from sage.npu.ascendc import *


def forward(x):
    return empty(x.shape, float16)
