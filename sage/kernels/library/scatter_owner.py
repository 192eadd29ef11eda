"""The owner-computes walk of a row scatter without accumulation (index_copy, index_put): a
block owns destination rows [t0, t1) of the flattened [O, D] and copies, in index order, the
source rows whose index lands in its range (see scatter_rows.py for why).

Every block must look at all C indices. Read one by one on the scalar unit that is a scalar
load of ~20 cycles per index in every block (20k cycles for 1000 indices, more than moving
the rows), so the vector unit tests them first: the indices' low 32-bit words as float32
lanes (exact for |index| < 2^24), four CompareScalars for "in [a, b) or in [a - D, b - D)"
(the block's rows, directly or as negative indices), And/Or into one bit mask; the scalar unit
then reads the mask 32 bits at a time and looks only at the indices whose bit is set. A set
bit is a candidate, checked again on the exact index (a huge out-of-range int64 can alias in
its low word); a valid index in range always sets its bit.

Indices that do not fit the filter's UB (more than FILTER_INDICES), or rows too many for exact
float32 compares, fall back to the plain scalar scan.
"""

from __future__ import annotations

from sage.kernels.library.source import DTYPE_SIZE

FILTER_INDICES = 6144          # lanes and masks take 8 x 2C + C / 2 B of UB for int64 indices
EXACT_FLOAT = 1 << 24


def _indent(text: str, levels: int) -> str:
    return text.replace("\n", "\n" + "    " * levels)


def filter_lanes(count: int, rows: int, index_dtype: str) -> int:
    """float32 lanes of the vector filter (a whole number of 256 B repeats); 0: scalar scan."""
    if count > FILTER_INDICES or rows >= EXACT_FLOAT:
        return 0
    step = DTYPE_SIZE[index_dtype] // 4
    return -(-count * step // 64) * 64


def filter_buffers(lanes: int) -> str:
    """Init: the UB the filter needs (the index buffer must hold `lanes` int32 words too)."""
    if not lanes:
        return ""
    return f'''
        self.lb = TBuf(TPosition.VECCALC)
        self.pipe.InitBuffer(self.lb, {lanes * 4})
        self.mb = TBuf(TPosition.VECCALC)
        self.pipe.InitBuffer(self.mb, {4 * _mask_bytes(lanes)})'''


def _mask_bytes(lanes: int) -> int:
    return -(-lanes // 8 // 32) * 32


def owner_loop(d: int, c: int, out_offset: int, inner: int, index_dtype: str, lanes: int, move: str) -> str:
    """Process, after the indices are in UB as `ix`: copy src row t = o * C + j to GM offset dst."""
    copy = f'''
                    r = ix.GetValue(j)
                    if r < 0:
                        r = r + {d}
                    s = o * {d} + r
                    if s >= self.t0 and s < self.t1:
                        dst = {out_offset} + s * {inner}
                        t = o * {c} + j{_indent(move, 3)}'''
    if not lanes:
        return f'''
        for o in range(self.t0 // {d}, (self.t1 - 1) // {d} + 1):
            for j in range({c}):{copy}'''
    step = DTYPE_SIZE[index_dtype] // 4        # int32 words per index; its low word comes first
    mb, half = _mask_bytes(lanes), lanes // 16
    masks = "\n".join(f"        m{k} = mk[{k * mb}]" for k in range(4))
    return f'''
        mk = self.mb.Get(uint8)
{masks}
        fl = self.lb.Get(float32)
        SetFlag(HardEvent.MTE2_V, 2)
        WaitFlag(HardEvent.MTE2_V, 2)
        Cast(fl, ix.ReinterpretCast(int32), RoundMode.CAST_NONE, {lanes})
        words = m0.ReinterpretCast(int32)
        for o in range(self.t0 // {d}, (self.t1 - 1) // {d} + 1):
            a = max(self.t0, o * {d}) - o * {d}
            b = min(self.t1, o * {d} + {d}) - o * {d}
            PipeBarrier(PIPE_ALL)
            CompareScalar(m0, fl, a * 1.0, CMPMODE.GE, {lanes})
            CompareScalar(m1, fl, b * 1.0, CMPMODE.LT, {lanes})
            CompareScalar(m2, fl, (a - {d}) * 1.0, CMPMODE.GE, {lanes})
            CompareScalar(m3, fl, (b - {d}) * 1.0, CMPMODE.LT, {lanes})
            PipeBarrier(PIPE_V)
            And(m0.ReinterpretCast(int16), m0.ReinterpretCast(int16), m1.ReinterpretCast(int16), {half})
            And(m2.ReinterpretCast(int16), m2.ReinterpretCast(int16), m3.ReinterpretCast(int16), {half})
            PipeBarrier(PIPE_V)
            Or(m0.ReinterpretCast(int16), m0.ReinterpretCast(int16), m2.ReinterpretCast(int16), {half})
            SetFlag(HardEvent.V_S, 2)
            WaitFlag(HardEvent.V_S, 2)
            for wi in range({lanes // 32}):
                w = words.GetValue(wi)
                if w != 0:
                    for q in range({32 // step}):
                        j = wi * {32 // step} + q
                        if (w >> (q * {step})) & 1 and j < {c}:{_indent(copy, 2)}'''
