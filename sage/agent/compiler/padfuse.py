"""A constant padding of the last axis as one tile program: the copy's own padding.

`F.pad(x, (lo, hi), value=v)` traces as a fill of the output followed by a copy of x into
its interior: two launches, the copy ordered after the fill (it overwrites most of it).
When only the last axis is padded and the borders are short, DataCopyPad pads each row
itself: a copy of x's row with `leftPadding = lo` and `rightPadding = hi` elements of v
(`DataCopyPadExtParams`, at most 32 B a row, docs/hardware.md "Data movement") puts the whole
output row in UB, and one program stores it. The fill and the copy become that program:
its leaf is x over the window [lo, lo + n) of the output's columns, v outside.

CANN's Ascend C API reference (DataCopyPad(ISASI), Atlas A2 supported, GM -> VECIN/VECOUT):
`DataCopyPadExtParams<T>{isPad, leftPadding, rightPadding, paddingValue}` fills elements on
the left or right of each copied block with the value, as this uses it
(hiascend.com/document/detail/zh/CANNCommunityEdition/910beta2/API/ascendcopapi/atlasascendc_api_07_0265.html).
"""

from __future__ import annotations

import numpy as np

from sage.agent.compiler.fusion import Group, Plan
from sage.agent.compiler.ir import Program
from sage.agent.compiler.tilegroup import GMap, LeafRef, TileGroup
from sage.kernels import Const, Expr, Op
from sage.kernels.library.source import DTYPE_SIZE

PAD_BYTES = 32            # DataCopyPad's left + right padding, per row
# Output rows at most this long: the program holds whole rows (no column tiles).
MAX_COLS = 8192
FLOATS = ("float32", "float16", "bfloat16")


def fuse_paddings(plan: Plan, prog: Program) -> None:
    """Rewrite `plan` in place: each fill directly followed by a copy into a slice of the
    last axis with short borders becomes one group."""
    i = 0
    while i + 1 < len(plan.groups):
        got = _fused(plan.groups[i], plan.groups[i + 1])
        if got is not None:
            plan.groups[i:i + 2] = [got]
            for k, g in enumerate(plan.groups):
                g.index = k
        i += 1


def _fused(a: Group, c: Group) -> Group | None:
    if a.kind != "tile" or c.kind != "tile" or a.tile is None or c.tile is None or a.maps or c.maps:
        return None
    if a.tile.rdims or c.tile.rdims or len(a.stores) != 1 or len(c.stores) != 1:
        return None
    (na, ra, ea), (_, rc, ec) = a.stores[0], c.stores[0]
    if not isinstance(ea, Const) or ra.buf != rc.buf:
        return None
    whole, part = ra.layout, rc.layout
    if whole.shape != tuple(a.tile.full) or part.shape != tuple(c.tile.full) or len(whole.shape) != len(part.shape):
        return None
    if whole.strides[-1] != 1 or part.strides != whole.strides or whole.shape[:-1] != part.shape[:-1]:
        return None
    lo, n, cols = part.offset - whole.offset, part.shape[-1], whole.shape[-1]
    if lo < 0 or lo + n > cols or cols > MAX_COLS:
        return None
    leaf = _only_leaf(ec)
    if leaf is None or leaf.buf is None or leaf.buf == ra.buf or leaf.dtype not in FLOATS or leaf.gmap.strides[-1] != 1:
        return None
    if (cols - n) * DTYPE_SIZE[leaf.dtype] > PAD_BYTES or not _exact(ea.value, leaf.dtype):
        return None
    padded = LeafRef(leaf.buf, GMap(leaf.gmap.strides, leaf.gmap.offset - lo), leaf.dtype, (lo, lo + n), float(ea.value))
    out = Group(a.index, "tile", a.nodes + c.nodes, TileGroup(tuple(a.tile.full), frozenset()))
    out.stores = [(na, ra, _swap(ec, padded))]
    return out


def _only_leaf(e: Expr) -> LeafRef | None:
    """The leaf of a copy (identities over one leaf: a cast converts where it loads)."""
    while isinstance(e, Op) and e.name == "identity":
        e = e.args[0]
    return e if isinstance(e, LeafRef) and e.window is None else None


def _swap(e, leaf: LeafRef):
    if isinstance(e, Op):
        return Op(e.name, tuple(_swap(x, leaf) for x in e.args), e.params)
    return leaf if isinstance(e, LeafRef) else e


def _exact(value: float, dtype: str) -> bool:
    """The fill survives the leaf's dtype (the padding is written in it)."""
    if dtype == "bfloat16":
        import torch
        return float(torch.tensor(value, dtype=torch.bfloat16).item()) == value
    return float(np.dtype(dtype).type(value)) == value
