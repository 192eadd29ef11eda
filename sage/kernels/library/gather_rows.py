"""Row gathers: out[o, i, :] = x[o, idx[i], :] (index_select, embedding), a vector-core
kernel that copies whole inner segments GM -> UB -> GM.

x is viewed as [O, D, I] (dense), the indices as N integers, out as [O, N, I] (dense).
Each block takes a range of (o, i) units; the block loads the indices in windows of
WINDOW (read by the scalar unit, after an MTE2 -> S sync), wraps negative ones as torch does, and
moves each unit's I elements through a VECIN -> VECOUT bound queue (no vector work: a pure
copy, MTE2 then MTE3):
- a long segment in chunks of CHUNK_BYTES, one copy in and one out each;
- short segments (at least two fit a chunk), when the units' copies would pass the budget of
  distinct records (repeat_cost.DISTINCT_BUDGET), in batches: a batch's units are consecutive
  rows of out, so their segments are copied in one by one at a 32 B pitch and out in one
  strided copy. One store per row made level2/6's case 30 (64,000 rows of 256 fp32,
  gathered twice) 128 K distinct records a launch, over the run's cap with the rest
  (sage/npu/sim/caps.py), and each of its 64,000 stores paid a copy's fixed cost.
"""

from __future__ import annotations

from dataclasses import dataclass

from sage.kernels.library.source import DTYPE_SIZE, HEADER, bind_globals, dsl_dtype
from sage.kernels.repeat_cost import DISTINCT_BUDGET
from sage.kernels.target import Target

CHUNK_BYTES = 16384
WINDOW = 4096              # the indices a block holds in UB at once (int64: 32 KB); more are reloaded
MAX_BATCH = 64             # short segments gathered into one strided store


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
    # a segment's elements in UB, to 32 B: the store's rows follow one another with no gap
    pitch = -(-spec.inner * es // 32) * 32 // es
    # batches only where the copies call for them: on level1/18's few thousand rows of 1.2 KB
    # they ran 1 % slower (a batch's store waits for all its loads)
    batch = min(CHUNK_BYTES // (pitch * es), MAX_BATCH) if 2 * units > DISTINCT_BUDGET else 1
    index = _index_lines(spec, window, ies)
    if batch >= 2:
        body = f"""        for t in range(self.t0, self.t1, {batch}):
            rn = min({batch}, self.t1 - t)
            y = self.q.AllocTensor({dt})
            for j in range(rn):
{index("t + j", " " * 16)}
                DataCopyPad(y[j * {pitch}], self.g_x[src], DataCopyExtParams(1, {spec.inner * es}, 0, 0, 0),
                            DataCopyPadExtParams(False, 0, 0, 0))
            self.q.EnQue(y)
            y = self.q.DeQue({dt})
            DataCopyPad(self.g_o[t * {spec.inner}], y,
                        DataCopyExtParams(rn, {spec.inner * es}, 0, 0, 0))
            self.q.FreeTensor(y)"""
    else:
        body = f"""        for t in range(self.t0, self.t1):
{index("t", " " * 12)}
            dst = t * {spec.inner}
            for c in range(0, {spec.inner}, {chunk}):
                k = min({chunk}, {spec.inner} - c)
                y = self.q.AllocTensor({dt})
                DataCopyPad(y, self.g_x[src + c], DataCopyExtParams(1, k * {es}, 0, 0, 0),
                            DataCopyPadExtParams(False, 0, 0, 0))
                self.q.EnQue(y)
                y = self.q.DeQue({dt})
                DataCopyPad(self.g_o[dst + c], y, DataCopyExtParams(1, k * {es}, 0, 0, 0))
                self.q.FreeTensor(y)"""
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
        self.w0 = -1
{body}


@kernel
def {n}_kernel(x, idx, out):
    op = Kernel_{n}()
    op.Init(x, idx, out)
    op.Process()


def {n}_launch(x, idx, out):
    {n}_kernel[{blocks}](x, idx, out)
'''


def _index_lines(spec: GatherRowsSpec, window, ies: int):  # noqa: ANN001, ANN202 - window: an int or a size
    """A writer of the lines that set `src`, the element unit `u` copies from: its index read
    from the window of indices (reloaded when it does not hold it; the scalar reads of the
    last window come first), wrapped as torch does."""
    def lines(u: str, ind: str) -> str:
        return "\n".join(ind + ln for ln in [
            f"u = {u}",
            f"o = u // {spec.count}",
            f"i = u % {spec.count}",
            f"if self.w0 < 0 or i < self.w0 or i >= self.w0 + {window}:",
            f"    self.w0 = min(i, {spec.count - window})",
            "    SetFlag(HardEvent.S_MTE2, 0)",
            "    WaitFlag(HardEvent.S_MTE2, 0)",
            f"    DataCopyPad(ix, self.g_i[{spec.index_offset} + self.w0], DataCopyExtParams(1, {window * ies}, 0, 0, 0),",
            "                DataCopyPadExtParams(False, 0, 0, 0))",
            "    SetFlag(HardEvent.MTE2_S, 0)",
            "    WaitFlag(HardEvent.MTE2_S, 0)",
            "r = ix.GetValue(i - self.w0)",
            "if r < 0:",
            f"    r = r + {spec.rows}",
            f"src = {spec.x_offset} + (o * {spec.rows} + r) * {spec.inner}"])
    return lines
