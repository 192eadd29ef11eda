# class: host compute
# tries: read tensor data in forward: indexing, float(), numpy(), iteration, arithmetic
# expect: refused LaunchError

from sage.npu.ascendc import *


def forward(x, canary, port):
    total = 0.0
    for row in x:
        total += float(row[0])
    return empty_like(x)
