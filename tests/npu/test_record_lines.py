"""Every instruction record names the kernel line that issued it, however the DSL was reached:
a direct call, a call with *args (through the sandbox's _apply_), a method of a handle, an
indexing through the sandbox's _getitem_, a helper function. Expected lines are found in the source by their
markers, not read back from the simulator."""

import numpy as np

from sage.npu.execute import run_functional
from sage.npu.hardware import load_preset

SOURCE = '''
from sage.npu.ascendc import *

def helper(t):
    Adds(t, t, 1.0, 64)                                  # @helper
    return t

@kernel
def k(x, y):
    pipe = TPipe()
    q = TQue(TPosition.VECIN, 1)
    pipe.InitBuffer(q, 1, 256)
    b = TBuf(TPosition.VECCALC)
    pipe.InitBuffer(b, 512)
    xg = GlobalTensor()
    xg.SetGlobalBuffer(x)
    t = b.Get(float32)
    a = q.AllocTensor(float32)
    DataCopy(a, xg, 64)                                  # @copy
    q.EnQue(a)                                           # @enque
    a = q.DeQue(float32)                                 # @deque
    args = (t, a, 64)
    Exp(*args)                                           # @starargs
    Muls(t[64], t, 2.0, 64)                              # @getitem
    helper(t)
    Relu(t, t, 64)                                       # @relu
    SetFlag(HardEvent.V_S, 0)                            # @setflag
    WaitFlag(HardEvent.V_S, 0)                           # @waitflag
    v = t.GetValue(0)                                    # @getvalue
    q.FreeTensor(a)                                      # @free

def forward(x):
    y = empty_like(x)
    k[1](x, y)
    return y
'''


def _line(marker: str) -> int:
    return next(i for i, text in enumerate(SOURCE.splitlines(), 1) if text.rstrip().endswith(f"# @{marker}"))


def test_each_record_carries_the_line_of_the_kernel_call_that_issued_it():
    run = run_functional(SOURCE, [np.ones(64, np.float32)], spec=load_preset("ascend910b2"), filename="lines.py")
    assert run.error is None, run.error
    (block,) = run.trace.launches[0].blocks
    got = [(r[11], r[12]) for r in block.records]
    assert got == [
        ("DataCopy", _line("copy")),
        ("EnQue(TQue(VECIN))", _line("enque")),
        ("DeQue(TQue(VECIN))", _line("deque")),
        ("Exp", _line("starargs")),
        ("Muls", _line("getitem")),
        ("Adds", _line("helper")),
        ("Relu", _line("relu")),
        ("SetFlag(V_S,0)", _line("setflag")),
        ("WaitFlag(V_S,0)", _line("waitflag")),
        ("GetValue", _line("getvalue")),
        ("FreeTensor(TQue(VECIN))", _line("free")),
    ]
