"""Row gathers: out[o, i, :] = x[o, idx[i], :] (index_select, embedding), a vector-core
kernel that copies whole inner segments GM -> UB -> GM.

x is viewed as [O, D, I] (dense), the indices as N integers, out as [O, N, I] (dense).
Each block takes a range of (o, i) units; the block loads the indices in windows of
WINDOW (read by the scalar unit, after an MTE2 -> S sync), wraps negative ones as torch does, and
moves each unit's I elements through a VECIN -> VECOUT bound queue in chunks (no vector
work: a pure copy, MTE2 then MTE3).
"""

from __future__ import annotations

from dataclasses import dataclass

from sage.kernels.library.source import DTYPE_SIZE, HEADER, bind_globals, dsl_dtype
from sage.kernels.target import Target

CHUNK_BYTES = 16384
WINDOW = 4096              # the indices a block holds in UB at once (int64: 32 KB); more are reloaded


@dataclass(frozen=True)
class GatherRowsSpec:
    name: str
    outer: int                 # O
    rows: int                  # D, the indexed axis
    inner: int                 # I, elements per copied segment
    count: int                 # N, indices
    dtype: str                 # x and out
    index_dtype: str           # int64 or int32
    x: str = "x"
    index: str = "idx"
    out: str = "out"
    x_offset: int = 0
    index_offset: int = 0


def gather_rows_args(spec: GatherRowsSpec) -> list[str]:
    return [spec.x, spec.index, spec.out]


def gather_rows_source(spec: GatherRowsSpec, target: Target, block_dim: int | None = None) -> str:
    es, ies = DTYPE_SIZE[spec.dtype], DTYPE_SIZE[spec.index_dtype]
    dt, it = dsl_dtype(spec.dtype), dsl_dtype(spec.index_dtype)
    chunk = max(1, CHUNK_BYTES // es)
    units = spec.outer * spec.count
    blocks = max(1, min(block_dim or target.vector_cores, units))
    per = -(-units // blocks)
    blocks = -(-units // per)
    n = spec.name
    window = min(spec.count, WINDOW)
    return f'''{HEADER}
class Kernel_{n}:
    def Init(self, x, idx, out):
        self.t0 = GetBlockIdx() * {per}
        self.t1 = min({units}, self.t0 + {per})
{bind_globals(x="x", i="idx", o="out")}
        self.pipe = TPipe()
        self.ib = TBuf(TPosition.VECCALC)
        self.pipe.InitBuffer(self.ib, ({window} * {ies} + 31) // 32 * 32)
        self.q = TQueBind(TPosition.VECIN, TPosition.VECOUT, 2)
        self.pipe.InitBuffer(self.q, 2, ({chunk} * {es} + 31) // 32 * 32)

    def Process(self):
        if self.t0 >= self.t1:
            return
        ix = self.ib.Get({it})
        w0 = -1
        for t in range(self.t0, self.t1):
            o = t // {spec.count}
            i = t % {spec.count}
            if w0 < 0 or i < w0 or i >= w0 + {window}:
                # the window of indices holding i; the scalar reads of the last one come first
                w0 = min(i, {spec.count - window})
                SetFlag(HardEvent.S_MTE2, 0)
                WaitFlag(HardEvent.S_MTE2, 0)
                DataCopyPad(ix, self.g_i[{spec.index_offset} + w0], DataCopyExtParams(1, {window * ies}, 0, 0, 0),
                            DataCopyPadExtParams(False, 0, 0, 0))
                SetFlag(HardEvent.MTE2_S, 0)
                WaitFlag(HardEvent.MTE2_S, 0)
            r = ix.GetValue(i - w0)
            if r < 0:
                r = r + {spec.rows}
            src = {spec.x_offset} + (o * {spec.rows} + r) * {spec.inner}
            dst = t * {spec.inner}
            for c in range(0, {spec.inner}, {chunk}):
                k = min({chunk}, {spec.inner} - c)
                y = self.q.AllocTensor({dt})
                DataCopyPad(y, self.g_x[src + c], DataCopyExtParams(1, k * {es}, 0, 0, 0),
                            DataCopyPadExtParams(False, 0, 0, 0))
                self.q.EnQue(y)
                y = self.q.DeQue({dt})
                DataCopyPad(self.g_o[dst + c], y, DataCopyExtParams(1, k * {es}, 0, 0, 0))
                self.q.FreeTensor(y)


@kernel
def {n}_kernel(x, idx, out):
    op = Kernel_{n}()
    op.Init(x, idx, out)
    op.Process()


def {n}_launch(x, idx, out):
    {n}_kernel[{blocks}](x, idx, out)
'''
