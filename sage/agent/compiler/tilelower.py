"""A tile group as a library `TileSpec`: leaves numbered, axes put in memory order and
merged, the row axis and the compute dtype chosen.

Axes: the kept axes in the memory order of the group's first full-level output, then the
reduced axes; size-1 axes dropped; neighbours merged wherever every access of the group
allows it (stride of the outer = stride of the inner x its size), never across the
kept/reduced boundary. The reduced axes must end up as one (the tile's columns); without
a reduction the innermost axis is the columns. The row axis is a knob (`row_axis`); by
default the outer axis that lets every operand be copied in whole rows, the largest.
"""

from __future__ import annotations

from sage.agent.compiler.expm1 import accurate_expm1
from sage.agent.compiler.build import Unsupported
from sage.agent.compiler.fusion import Group
from sage.agent.compiler.ir import Program
from sage.agent.compiler.tilegroup import GMap, LeafRef, leaves_of, seg_of
from sage.kernels import (
    VECTOR_OPS, Access, Const, Expr, Inp, Iota, Op, Reduce, TileOutput, TileSpec,
)
from sage.kernels import tile_load_plan

FLOATS = {"float32", "float16", "bfloat16"}
# Plans that copy one burst per tile row or per element. col_strided is one value per row
# (a per-channel weight when the rows are channels): with another row axis the same leaf
# is one scalar per tile, which is why it counts against an axis.
SLOW_PLANS = {"elements", "row_loop", "col_strided"}


def tile_spec(group: Group, prog: Program, name: str, *, fp32: bool = True, row_axis: int | None = None) -> TileSpec:
    tile = group.tile
    assert tile is not None
    outs: list[tuple[Expr, GMap, str, int]] = []
    for k, (node, ref, expr) in enumerate(group.stores):
        gm = group.maps[k] if group.maps else tile.gmap(ref.layout, ref.shape)
        assert gm is not None
        outs.append((expr, gm, ref.dtype, ref.buf))
    leaf_ids: dict[LeafRef, int] = {}
    for expr, *_ in outs:
        for leaf in reversed(leaves_of(expr)):
            leaf_ids.setdefault(leaf, len(leaf_ids))
    leaves = list(leaf_ids)
    maps = [lf.gmap for lf in leaves] + [o[1] for o in outs]
    dims, strides, row, segs = _canonical(tile.full, tile.rdims, maps, outs, tile.row_mode, tile.col_axis)
    offsets = [m.offset for m in maps]
    accesses: list[Access | Iota] = []
    for k, lf in enumerate(leaves):
        if lf.buf is None:
            accesses.append(Iota(coefs=strides[k], offset=offsets[k]))
        else:
            buf = prog.buffers[lf.buf]
            accesses.append(Access(arg=buf.name, dtype=buf.dtype, numel=buf.numel, strides=strides[k],
                                   offset=offsets[k], window=lf.window, seg=segs[k], fill=lf.fill))
    outputs = []
    for j, (expr, _, dtype, bid) in enumerate(outs):
        buf = prog.buffers[bid]
        acc = Access(arg=buf.name, dtype=dtype, numel=buf.numel, strides=strides[len(leaves) + j],
                     offset=offsets[len(leaves) + j])
        outputs.append(TileOutput(expr=accurate_expm1(_number(expr, leaf_ids)), access=acc))
    compute = _compute_dtype(accesses, outputs, fp32)
    spec = TileSpec(name=name, dims=dims, row=None, leaves=tuple(accesses), outputs=tuple(outputs), compute=compute,
                    reduce_rows=row is not None)
    if row is None:
        row = row_axis if row_axis is not None and row_axis < len(dims) - 1 else _row_axis(spec)
    return spec.model_copy(update={"row": row})


def _number(expr: Expr, ids: dict[LeafRef, int], done: dict[int, Expr] | None = None) -> Expr:
    """`expr` with its leaves numbered; a sub-expression shared by several parents (a DAG
    written out as a tree) is rewritten once, and stays shared (`done`, by node identity)."""
    done = {} if done is None else done
    out = done.get(id(expr))
    if out is not None:
        return out
    if isinstance(expr, LeafRef):
        out = Inp(ids[expr])
    elif isinstance(expr, Op):
        out = Op(expr.name, tuple(_number(a, ids, done) for a in expr.args), expr.params)
    elif isinstance(expr, Reduce):
        out = Reduce(expr.kind, _number(expr.arg, ids, done))
    else:
        out = expr
    done[id(expr)] = out
    return out


def _canonical(full: tuple[int, ...], rdims: frozenset[int], maps: list[GMap], outs: list,
               row_mode: bool = False, col_axis: int | None = None
               ) -> tuple[tuple[int, ...], list[tuple[int, ...]], int | None, list]:
    """(dims, strides of every map, the row axis when the program reduces over rows, each
    map's segment form or None).
    `col_axis` (windowed leaves' axis) stays the columns on its own."""
    kept = [i for i in range(len(full)) if i not in rdims and full[i] > 1]
    red = [i for i in range(len(full)) if i in rdims and full[i] > 1]
    n_leaves = len(maps) - len(outs)
    primary = next((m for m in maps[n_leaves:] if all(m.strides[i] for i in kept)), maps[n_leaves] if outs else None)
    lead = next((m for m in maps[:n_leaves] if all(m.strides[i] for i in red)), None)
    if row_mode and lead is not None and kept and red:
        return (*_row_canonical(full, kept, red, maps, lead), [None] * len(maps))
    if primary is not None:
        kept.sort(key=lambda i: -primary.strides[i])
    if lead is not None:
        red.sort(key=lambda i: -lead.strides[i])
    # per-segment reads (tile_seg.py) do not hold the reduced axes' run together
    segs = [seg_of(m, red, full) if len(red) > 1 and not row_mode else None for m in maps]
    runs = [m for m, sg in zip(maps, segs) if sg is None]
    axes: list[list[int]] = [[i] for i in kept] + [[i] for i in red]
    merged: list[list[int]] = []
    for ax in axes:
        inside = (merged[-1][0] in rdims) if merged else False
        if merged and inside == (ax[0] in rdims) and _mergeable(merged[-1], ax, full, runs if inside else maps) \
                and col_axis not in ax + merged[-1]:
            merged[-1] = merged[-1] + ax
        else:
            merged.append(ax)
    if red and sum(1 for ax in merged if ax[0] in rdims) > 1:
        raise Unsupported("a reduction over axes that do not merge into one run in memory")
    if not merged:
        # one element: read as a one-column row (stride 1, not a broadcast scalar), the tile
        # program every other size of the same elementwise work runs
        return (1,), [(1,) for _ in maps], None, [None] * len(maps)
    if col_axis is not None and merged[-1] != [col_axis]:
        raise Unsupported("a column selection whose axis is not the tile's columns")
    dims = tuple(_size(ax, full) for ax in merged)
    strides = [tuple(m.strides[ax[-1]] for ax in merged) for m in maps]
    if rdims and not red:            # reduced axes of size 1: a column axis of one element
        dims, strides = dims + (1,), [s + (0,) for s in strides]
    return dims, strides, None, segs


def _row_canonical(full, kept: list[int], red: list[int], maps: list[GMap], lead: GMap):
    """Row mode: loop axes, the reduced axis (the tile's rows), the innermost kept axis."""
    kept.sort(key=lambda i: -lead.strides[i])
    red.sort(key=lambda i: -lead.strides[i])
    runs: list[list[int]] = []
    for group in (kept[:-1], red, kept[-1:]):
        merged: list[list[int]] = []
        for ax in ([i] for i in group):
            if merged and _mergeable(merged[-1], ax, full, maps):
                merged[-1] = merged[-1] + ax
            else:
                merged.append(ax)
        if group is red and len(merged) > 1:
            raise Unsupported("a reduction over axes that do not merge into one run in memory")
        runs += merged
    row = len(runs) - 2
    dims = tuple(_size(ax, full) for ax in runs)
    return dims, [tuple(m.strides[ax[-1]] for ax in runs) for m in maps], row


def _size(ax: list[int], full: tuple[int, ...]) -> int:
    n = 1
    for i in ax:
        n *= full[i]
    return n


def _mergeable(outer: list[int], inner: list[int], full: tuple[int, ...], maps: list[GMap]) -> bool:
    n_inner = _size(inner, full)
    return all(m.strides[outer[-1]] == m.strides[inner[-1]] * n_inner for m in maps)


def _row_axis(spec: TileSpec) -> int | None:
    outer = list(range(len(spec.dims) - 1))
    if not outer:
        return None

    def score(axis: int) -> tuple:
        trial = spec.model_copy(update={"row": axis})
        slow = sum(1 for leaf in spec.leaves if isinstance(leaf, Access)
                   and tile_load_plan(trial, leaf, spec.cols, 8192) in SLOW_PLANS)
        return (-slow, min(spec.dims[axis], 64), axis)

    return max(outer, key=score)


def _compute_dtype(leaves: list, outputs: list[TileOutput], fp32: bool) -> str:
    dtypes = {l.dtype for l in leaves if isinstance(l, Access)} | {o.access.dtype for o in outputs}
    ops = set()
    reduce = iota = False
    for o in outputs:
        stack = [o.expr]
        while stack:
            e = stack.pop()
            if isinstance(e, Op):
                ops.add(e.name)
                stack.extend(e.args)
            elif isinstance(e, Reduce):
                reduce = True
                stack.append(e.arg)
    iota = any(isinstance(l, Iota) for l in leaves)
    # rounding to an integer (floor, sin's range reduction) goes through int32, and A2 casts
    # int32 back to float32 only (no int32 -> half: CANN's Cast table for Atlas A2)
    via_int32 = any("int" in VECTOR_OPS[n].needs for n in ops if n in VECTOR_OPS)
    floats = dtypes & FLOATS
    if floats:
        if fp32 or "float32" in floats or "bfloat16" in floats or reduce or iota or via_int32:
            return "float32"
        return "float16"
    if dtypes <= {"bool"} and not iota and not via_int32:
        return "float16"
    # A2's Select takes half/float only, so a comparison's 0/1 result (Compare, then Select)
    # and a reduction (ReduceSum/Max) compute in float32 (exact below 2**24)
    if not reduce and all(n == "colsel" or VECTOR_OPS[n].int32 and not VECTOR_OPS[n].compare for n in ops):
        return "int32"
    return "float32"


__all__ = ["Const", "tile_spec"]
