"""How each tensor of a tile program is copied: `plan_tile` and the leaves that read other leaves' copies.

`plan_tile` picks each leaf's copy plan (`tile_spec.load_plan`), the output plans, the
loop order and the leaves kept resident (tile_resident.py), and the scratch the
conversions need; it returns the `TileLayout` (tile_layout.py), sized later. Span leaves
that read inside another's span (`shared_spans`) and windowed leaves copied in UB out of
a host leaf's tile (`window_hosts`) are decided here.
"""

from __future__ import annotations

from sage.kernels.chain import Expr, Op, Reduce
from sage.kernels.library.knobs import Knobs
from sage.kernels.library.casts import hops
from sage.kernels.library.source import DTYPE_SIZE, compensated
from sage.kernels.library.tile_layout import GATHER_PLANS, OUT_GATHER_PLANS, TileLayout, stored_dtype
from sage.kernels.library.tile_round import rounded_slots, rounded_store
from sage.kernels.library.tile_resident import ROW_TILES, loop_order, resident_leaves
from sage.kernels.library.tile_spec import Access, Iota, TileSpec, load_plan
from sage.kernels.target import Target

SPAN_LIMIT = 8192          # elements of a span copy per tile row


def walk(e: Expr, seen: set[int] | None = None):
    """e and its distinct sub-expressions, parents first: a node reached again through
    another parent (a DAG written out as a tree) is not walked twice."""
    seen = set() if seen is None else seen
    if id(e) in seen:
        return
    seen.add(id(e))
    yield e
    if isinstance(e, Op):
        for a in e.args:
            yield from walk(a, seen)
    elif isinstance(e, Reduce):
        yield from walk(e.arg, seen)


def plan_tile(spec: TileSpec, knobs: Knobs, target: Target) -> TileLayout:
    lay = TileLayout(spec, knobs, target, bn=knobs.buffer_num)
    sizes = [DTYPE_SIZE[spec.compute]] + [DTYPE_SIZE[l.dtype] for l in spec.leaves if isinstance(l, Access)]
    sizes += [DTYPE_SIZE[o.access.dtype] for o in spec.outputs]
    lay.align = target.block_bytes // min(sizes)
    reduces: list[Expr] = []
    for e in (e for o in spec.outputs for e in walk(o.expr) if isinstance(e, Reduce)):
        if e not in reduces:
            reduces.append(e)
    lay.reduce, lay.accumulators = bool(reduces), len(reduces)
    lay.compensated = sum(1 for e in reduces if compensated(e.kind, spec.compute))
    for i, leaf in enumerate(spec.leaves):
        if isinstance(leaf, Access):
            lay.plans[i] = load_plan(spec, leaf, spec.cols, SPAN_LIMIT)
    lay.share = shared_spans(spec, lay.plans)
    lay.windows = window_hosts(spec)
    for i in lay.windows:
        lay.plans[i] = "window"
    skip = {*lay.share, *lay.windows}
    lay.loop_order = loop_order(spec, lay.plans, knobs.tile_len)
    lay.resident = resident_leaves(spec, lay.plans, lay.loop_order, knobs.tile_len, skip)
    if not lay.resident:          # no leaf gains from another order: the spec's own
        lay.loop_order = list(spec.loops) + ([] if spec.reduce_rows else [ROW_TILES])
        lay.resident = resident_leaves(spec, lay.plans, lay.loop_order, knobs.tile_len, skip)
    for out in spec.outputs:
        sr, sc = spec.strides_of(out.access)
        if sc == 0:
            lay.out_level.append("col")
            lay.out_plans.append("col" if sr in (0, 1) else "col_strided")
        else:
            lay.out_level.append("full")
            plan = "rows" if sc == 1 and (sr >= spec.cols or sr == 0) else \
                "row_loop" if sc == 1 else "transposed" if sr == 1 and sc >= spec.rows else "elements"
            lay.out_plans.append(plan)
    ct = spec.compute
    lay.cvt_slots = max([hops(leaf.dtype, ct) for i, leaf in enumerate(spec.leaves)
                         if isinstance(leaf, Access) and leaf.dtype != ct]
                        + [hops(ct, stored_dtype(o.access.dtype, plan)) for o, plan in zip(spec.outputs, lay.out_plans)
                           if o.access.dtype != ct] + [0])
    lay.needs_ramp = any(p in GATHER_PLANS for p in lay.plans.values()) or \
        any(p in OUT_GATHER_PLANS for p in lay.out_plans) or \
        any(isinstance(leaf, Iota) for leaf in spec.leaves)
    if lay.needs_ramp and ct != "int32":
        lay.cvt_slots = max(lay.cvt_slots, hops("int32", ct))
    for o, plan in zip(spec.outputs, lay.out_plans):
        if rounded_store(o.expr, ct, o.access.dtype) is not None:
            lay.cvt_slots = max(lay.cvt_slots, rounded_slots(stored_dtype(o.access.dtype, plan)))
    return lay


def shared_spans(spec: TileSpec, plans: dict[int, str]) -> dict[int, tuple[int, int]]:
    """Span leaves of one tensor with the same strides whose elements sit a little after
    another's (the taps of a strided pooling window: x[2i] and x[2i + 1], and the next input
    row's x[W + 2i]): each reads out of the first one's span, made that much longer, instead
    of copying its own. One copy then moves each input byte once, not once per tap, in
    fewer and longer bursts (CANN: bandwidth grows with the bytes of one copy). A tap joins
    while the longer span stays inside one row stride and reads no more elements than the
    taps' own spans would (a tap far away starts its own copy)."""
    share: dict[int, tuple[int, int]] = {}
    runs: dict[tuple, list[int]] = {}
    for i, leaf in enumerate(spec.leaves):
        if plans.get(i) == "span":
            assert isinstance(leaf, Access)
            runs.setdefault((leaf.arg, leaf.dtype, leaf.strides), []).append(i)
    for members in runs.values():
        host = None
        taps = 0
        for i in sorted(members, key=lambda k: spec.leaves[k].offset):
            sr, sc = spec.strides_of(spec.leaves[i])
            own = (spec.cols - 1) * sc + 1
            if host is not None:
                d = spec.leaves[i].offset - spec.leaves[host].offset
                span = own + max([d, *(e for h, e in share.values() if h == host)])
                if span <= min(sr, SPAN_LIMIT) and (d <= sc or span <= (taps + 1) * own):
                    share[i] = (host, d)
                    taps += 1
                    continue
            host, taps = i, 1
    return share


def window_hosts(spec: TileSpec) -> dict[int, tuple[int, int, int, int]]:
    """Each windowed leaf's host: a leaf of the same buffer, dtype and strides without a
    window, whose row holds the window shifted by the offsets' difference (in columns) from
    a 32 B block on (colsel.py checks that one exists)."""
    out: dict[int, tuple[int, int, int, int]] = {}
    for i, leaf in enumerate(spec.leaves):
        if not isinstance(leaf, Access) or leaf.window is None or leaf.fill is not None:
            continue
        lo, hi = leaf.window
        _, sc = spec.strides_of(leaf)
        for h, host in enumerate(spec.leaves):
            if not isinstance(host, Access) or host.window is not None or host.arg != leaf.arg \
                    or host.dtype != leaf.dtype or host.strides != leaf.strides:
                continue
            d = leaf.offset - host.offset
            if sc > 0 and d % sc == 0 and 0 <= lo + d // sc and hi + d // sc <= spec.cols:
                out[i] = (h, d // sc, lo, hi)
                break
        else:
            raise ValueError(f"windowed leaf {i} has no leaf of its buffer to be copied from")
    return out

