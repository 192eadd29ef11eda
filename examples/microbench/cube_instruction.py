"""Micro-benchmark: one cube-path instruction on one core (benchmarks/fidelity.py reads its
duration from the trace).

forward(out, m, k, n, rows, cols, what): what = "mmad" (Mmad m x k x n, fp16 -> fp32),
"load" (LoadData of a rows x cols fp16 tile, L1 -> L0A) or "fix" (Fixpipe of a rows x cols
fp32 tile, L0C -> GM, into `out`).
"""

from sage.npu.ascendc import *


@kernel
def cube_instruction(c_gm, m, k, n, rows, cols, what):
    pipe = TPipe()
    a1 = TBuf(TPosition.A1)
    pipe.InitBuffer(a1, 262144)
    qa = TQue(TPosition.A2, 1)
    pipe.InitBuffer(qa, 1, 65536)
    qb = TQue(TPosition.B2, 1)
    pipe.InitBuffer(qb, 1, 65536)
    qc = TQue(TPosition.CO1, 1)
    pipe.InitBuffer(qc, 1, 131072)
    a = qa.AllocTensor(float16)
    b = qb.AllocTensor(float16)
    c = qc.AllocTensor(float32)
    if what == "mmad":
        Mmad(c, a, b, MmadParams(m, n, k, True))
    elif what == "load":
        LoadData(a, a1.Get(float16), LoadData2DParams(rows, cols, 0, False))
    else:
        gc = GlobalTensor()
        gc.SetGlobalBuffer(c_gm, 0, rows * cols)
        Fixpipe(gc, c, FixpipeParams(rows, cols, 0, 0))


def forward(out, m, k, n, rows, cols, what):
    done = empty((1,), float32)
    cube_instruction[1](out, m, k, n, rows, cols, what)
    return done
