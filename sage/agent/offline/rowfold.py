"""Row kernels whose reductions fold the row with plain vector ops first.

`ReduceSum`/`ReduceMax` cost a cross-lane step per 256 B repeat (vcadd/vcmax, ~7 cycles a
repeat) plus a second level. Halving the row with `Add`/`Max` (~2 cycles a repeat) until
one repeat is left, then reducing that repeat, does the same work for a third of the
vector time, which is what a row kernel spends most of its time on. This is the library's
row template (sage.bench.library.rowwise) with only the reduction step replaced; the
agent applies it when its `tree_reduce` knob is on.
"""

from __future__ import annotations

from sage.bench.library.knobs import Knobs
from sage.bench.library.rowwise import RowSpec, _RowWriter

_FOLD = '''

def _fold(fn, buf, src, n, lanes):
    # Halves n (a multiple of `lanes` at each step) with one vector op per level; the tail
    # beyond 2h is merged into the first part. Returns the buffer and count left to reduce.
    cur = src
    while n >= 2 * lanes:
        h = n // 2 // lanes * lanes
        fn(buf, cur, cur[h], h)
        off = 2 * h
        while off < n:
            c = min(n - off, h)
            fn(buf, buf, cur[off], c)
            off += c
        cur = buf
        n = h
    return cur, n
'''


class _FoldingRowWriter(_RowWriter):
    def reduce_line(self, kind: str, dst: str, src: str, count: str) -> list[str]:
        fn = {"sum": "Add", "max": "Max", "min": "Min"}[kind]
        red = {"sum": "ReduceSum", "max": "ReduceMax", "min": "ReduceMin"}[kind]
        # Accumulators of the long-row path are dead once reduced: fold them in place. In
        # the rows-fit path `self.acc` is free scratch of a whole tile.
        buf = src if src in ("self.acc", "self.acc2") else "self.acc"
        lanes = 256 // self.csz
        return [f"_r, _n = _fold({fn}, {buf}, {src}, {count}, {lanes})",
                f"{red}(self.red, _r, self.work, _n)",
                "SetFlag(HardEvent.V_S, 0)", "WaitFlag(HardEvent.V_S, 0)",
                f"{dst} = self.red.GetValue(0)"]

    def write(self, with_forward: bool) -> str:
        return super().write(with_forward).rstrip("\n") + "\n" + _FOLD


def folded_row_source(spec: RowSpec, knobs: Knobs, *, with_forward: bool = True) -> str:
    return _FoldingRowWriter(spec, knobs).write(with_forward)
