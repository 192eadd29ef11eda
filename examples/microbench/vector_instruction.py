"""Micro-benchmark: one vector instruction, timed at two sizes (benchmarks/fidelity.py fits
head and slope from the trace).

forward(like, n1, n2, op): `like` gives the dtype; runs instruction `op` on n1 elements, then,
after a PipeBarrier (so the pipe is idle and the head is paid again), on n2 elements.
"""

from sage.npu.ascendc import *

# op -> the instruction on operands x, y (the dtype of `like`), z (fp32 for fp16 inputs)
OPS = {
    "Add": lambda x, y, z, n, lanes: Add(x, x, y, n),
    "Mul": lambda x, y, z, n, lanes: Mul(x, x, y, n),
    "Max": lambda x, y, z, n, lanes: Max(x, x, y, n),
    "Adds": lambda x, y, z, n, lanes: Adds(x, y, 1.0, n),
    "Muls": lambda x, y, z, n, lanes: Muls(x, y, 1.0, n),
    "Exp": lambda x, y, z, n, lanes: Exp(x, y, n),
    "Ln": lambda x, y, z, n, lanes: Ln(x, y, n),
    "Sqrt": lambda x, y, z, n, lanes: Sqrt(x, y, n),
    "Div": lambda x, y, z, n, lanes: Div(x, x, y, n),
    "Duplicate": lambda x, y, z, n, lanes: Duplicate(x, 2.0, n),
    "WholeReduceSum": lambda x, y, z, n, lanes: WholeReduceSum(x, y, lanes, n // lanes, 1, 1, 8),
    "WholeReduceMax": lambda x, y, z, n, lanes: WholeReduceMax(x, y, lanes, n // lanes, 2, 1, 8),
    "Cast": lambda x, y, z, n, lanes: Cast(z, x, RoundMode.CAST_NONE, n),
}
BUFFER_BYTES = 65536


@kernel
def vector_instruction(n1, n2, op, dtype, wide):
    pipe = TPipe()
    bufs = [TBuf(TPosition.VECCALC) for _ in range(3)]
    for b in bufs:
        pipe.InitBuffer(b, BUFFER_BYTES)
    x = bufs[0].Get(dtype)
    y = bufs[1].Get(dtype)
    z = bufs[2].Get(wide)
    Duplicate(x, 1.0, n2)
    Duplicate(y, 1.0, n2)
    lanes = 256 // sizeof(dtype)
    for n in (n1, n2):
        PipeBarrier(PIPE_V)
        OPS[op](x, y, z, n, lanes)


def forward(like, n1, n2, op):
    out = empty_like(like)
    vector_instruction[1](n1, n2, op, like.dtype, float32 if like.dtype == float16 else like.dtype)
    return out
