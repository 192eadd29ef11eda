"""Histograms: bincount (counts of integer values) and histc (counts of equal-width bins over
[lo, hi], a value equal to hi in the last bin, values outside ignored), in two launches.

1. Each block bins its range of x with the scalar unit into an int32 histogram in UB (the
   vector unit has no scatter-add) and stores it as its own row of a [blocks, bins] int32
   workspace: no two blocks write the same bytes, and no 64-bit atomic add is needed.
2. One block sums the rows with vector Adds and casts the counts to the output dtype.

Values a bincount cannot place (negative, or past the traced output length) are skipped.
"""

from __future__ import annotations

from dataclasses import dataclass

from sage.kernels.library.source import DTYPE_SIZE, HEADER, dsl_dtype
from sage.kernels.target import Target

CHUNK = 4096
MAX_BINS = 8192
# Binning is ~8 scalar instructions an element; past this the simulator's instruction budget
# (5M a run) runs out. A vector histogram (compare-and-count, or a one-hot matmul) is not written.
MAX_ELEMENTS = 262144
MAX_BLOCK_ROWS_BYTES = 160 * 1024


@dataclass(frozen=True)
class HistogramSpec:
    name: str
    numel: int                 # elements of x
    bins: int                  # output length
    dtype: str                 # x
    out_dtype: str
    lo: float | None = None    # histc range; None: bincount
    hi: float | None = None
    x: str = "x"
    out: str = "out"
    x_offset: int = 0


def histogram_args(spec: HistogramSpec) -> list[str]:
    return [spec.x, spec.out]


def _ceil32(n: int) -> int:
    return -(-n // 32) * 32


def _cast_out(spec: HistogramSpec) -> tuple[str, str]:
    """(buffers, instructions) that turn the int32 sum `acc` into `res` of the output dtype."""
    od = dsl_dtype(spec.out_dtype)
    b = spec.bins
    if spec.out_dtype == "int32":
        return "", "res = acc"
    steps = {
        "int64": [f"Cast(res, acc, RoundMode.CAST_NONE, {b})"],
        "float32": [f"Cast(res, acc, RoundMode.CAST_RINT, {b})"],
        "float16": [f"Cast(f32, acc, RoundMode.CAST_RINT, {b})", f"Cast(res, f32, RoundMode.CAST_RINT, {b})"],
        "bfloat16": [f"Cast(f32, acc, RoundMode.CAST_RINT, {b})", f"Cast(res, f32, RoundMode.CAST_RINT, {b})"],
    }
    if spec.out_dtype not in steps:
        raise ValueError(f"counts returned as {spec.out_dtype}")
    bufs = f'''
        self.rb = TBuf(TPosition.VECCALC)
        self.pipe.InitBuffer(self.rb, {_ceil32(b * DTYPE_SIZE[spec.out_dtype])})
        self.fb = TBuf(TPosition.VECCALC)
        self.pipe.InitBuffer(self.fb, {_ceil32(b * 4)})'''
    body = [f"res = self.rb.Get({od})", "f32 = self.fb.Get(float32)", *steps[spec.out_dtype]]
    return bufs, "\n        ".join(body)


def histogram_source(spec: HistogramSpec, target: Target, block_dim: int | None = None) -> str:
    if spec.numel > MAX_ELEMENTS:
        raise ValueError(f"{spec.numel} elements binned by the scalar unit (at most {MAX_ELEMENTS}; a vector "
                         "histogram is not written yet)")
    if spec.bins > MAX_BINS:
        raise ValueError(f"{spec.bins} bins (at most {MAX_BINS} in UB)")
    es = DTYPE_SIZE[spec.dtype]
    dt = dsl_dtype(spec.dtype)
    b = spec.bins
    pitch = _ceil32(b * 4)
    blocks = max(1, min(block_dim or target.vector_cores, spec.numel, MAX_BLOCK_ROWS_BYTES // pitch))
    per = -(-spec.numel // blocks)
    blocks = -(-spec.numel // per)
    chunk = min(CHUNK, per)
    n = spec.name
    if spec.lo is None:
        place = f'''
                v = int(xb.GetValue(j))
                if v >= 0 and v < {b}:
                    hb.SetValue(v, hb.GetValue(v) + 1)'''
    else:
        lo, hi = float(spec.lo), float(spec.hi)
        place = f'''
                v = float(xb.GetValue(j))
                if v >= {lo!r} and v <= {hi!r}:
                    k = min(int((v - {lo!r}) * {b / (hi - lo)!r}), {b - 1})
                    hb.SetValue(k, hb.GetValue(k) + 1)'''
    cast_bufs, cast = _cast_out(spec)
    return f'''{HEADER}
class Kernel_{n}:
    def Init(self, x, ws):
        self.e0 = GetBlockIdx() * {per}
        self.e1 = min({spec.numel}, self.e0 + {per})
        self.g_x = GlobalTensor()
        self.g_x.SetGlobalBuffer(x)
        self.g_w = GlobalTensor()
        self.g_w.SetGlobalBuffer(ws)
        self.pipe = TPipe()
        self.xbuf = TBuf(TPosition.VECCALC)
        self.pipe.InitBuffer(self.xbuf, {_ceil32(chunk * es)})
        self.hbuf = TBuf(TPosition.VECCALC)
        self.pipe.InitBuffer(self.hbuf, {pitch})

    def Process(self):
        xb = self.xbuf.Get({dt})
        hb = self.hbuf.Get(int32)
        Duplicate(hb, 0, {b})
        SetFlag(HardEvent.V_S, 0)
        WaitFlag(HardEvent.V_S, 0)
        for e in range(self.e0, self.e1, {chunk}):
            c = min({chunk}, self.e1 - e)
            PipeBarrier(PIPE_ALL)
            DataCopyPad(xb, self.g_x[{spec.x_offset} + e], DataCopyExtParams(1, c * {es}, 0, 0, 0),
                        DataCopyPadExtParams(False, 0, 0, 0))
            SetFlag(HardEvent.MTE2_S, 0)
            WaitFlag(HardEvent.MTE2_S, 0)
            for j in range(c):{place}
        SetFlag(HardEvent.S_MTE3, 0)
        WaitFlag(HardEvent.S_MTE3, 0)
        DataCopyPad(self.g_w[GetBlockIdx() * {b}], hb, DataCopyExtParams(1, {b * 4}, 0, 0, 0))


class Sum_{n}:
    def Init(self, ws, out):
        self.g_w = GlobalTensor()
        self.g_w.SetGlobalBuffer(ws)
        self.g_o = GlobalTensor()
        self.g_o.SetGlobalBuffer(out)
        self.pipe = TPipe()
        self.wbuf = TBuf(TPosition.VECCALC)
        self.pipe.InitBuffer(self.wbuf, {blocks * pitch}){cast_bufs}

    def Process(self):
        acc = self.wbuf.Get(int32)
        DataCopyPad(acc, self.g_w[0], DataCopyExtParams({blocks}, {b * 4}, 0, 0, 0),
                    DataCopyPadExtParams(False, 0, 0, 0))
        SetFlag(HardEvent.MTE2_V, 0)
        WaitFlag(HardEvent.MTE2_V, 0)
        for r in range(1, {blocks}):
            Add(acc, acc, acc[r * {pitch // 4}], {b})
        {cast}
        SetFlag(HardEvent.V_MTE3, 0)
        WaitFlag(HardEvent.V_MTE3, 0)
        DataCopyPad(self.g_o[0], res, DataCopyExtParams(1, {b * DTYPE_SIZE[spec.out_dtype]}, 0, 0, 0))


@kernel
def {n}_kernel(x, ws):
    op = Kernel_{n}()
    op.Init(x, ws)
    op.Process()


@kernel
def {n}_sum(ws, out):
    op = Sum_{n}()
    op.Init(ws, out)
    op.Process()


def {n}_launch(x, out):
    ws = empty(({blocks * b},), int32)
    {n}_kernel[{blocks}](x, ws)
    {n}_sum[1](ws, out)
'''
