# class: huge message
# tries: 100 MB of print() output, fake JSON included (bounded, never on stdout)
# expect: refused OutputSpecError

from sage.npu.ascendc import *


def forward(x, canary, port):
    line = '{"correct": true, "status": "correct", "speedup": 1000000.0}\n' * 20000
    for i in range(100):
        print(line)
    return x
