"""Piecewise reads: a tile group reading a buffer that other tile groups wrote in pieces
(the slices of a `cat`, a padded copy over a fill) computes those pieces' expressions
itself, in one sub-program per box of its iteration space.

`cat([-x2, x1])` or `pad(x)` is a temporary written by copies into slices; its only
reader loads it back. When every read of it, restricted to a box of the reader's
iteration space, falls inside one writer's slice (the latest writer there: a copy over a
fill wins where it wrote), the reader's box reads that writer's expression through the
composed map instead, and nothing stores the temporary. The boxes are found by cutting
the reader's space along its axes until every box is covered; they are independent tile
programs, which `merge.py` runs as one launch. A read of the writer's value skips its
rounding to the temporary's dtype (float temporaries only): the result is as accurate as
computing in float32 and rounding once.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from sage.agent.compiler.fusion import Group, Plan
from sage.agent.compiler.ir import BufferUses, Layout, Node, Program
from sage.agent.compiler.tilegroup import GMap, LeafRef, TileGroup, has_reduce, leaves_of
from sage.agent.compiler.colsel import column_select
from sage.kernels import Expr, Op, Reduce

# More boxes than this: the reader stays one program and the temporary stays in GM. Each
# box is a copy of the reader's kernel source: a 2-D padding's nine boxes of a nine-tap
# stencil make a file over the sandbox's 256 KB source limit, so only cuts along one or
# two boundaries (a cat of up to four pieces, a 1-D padding) are taken.
MAX_PIECES = 4
# A box thinner than this share of the reader's space is not worth its own program: the
# one-row border slabs of a padding run tiles of one row (a stride-2 depthwise conv went
# from 66 to 256 us device cut that way), while the halves of a rotate-half are large.
MIN_SHARE = 1 / 16
FLOATS = ("float32", "float16", "bfloat16")

Box = tuple[tuple[int, int], ...]


@dataclass
class Writer:
    node: Node
    view: Layout
    expr: Expr                    # its value over its group's axes (= the view's axes)
    group: Group


@dataclass
class Cover:
    writer: Writer
    axes: list[tuple[int, int] | None]    # per reader axis: (view axis, step) or None (not moving)
    start: tuple[int, ...]                 # the view index at the box's first element


def split_piecewise_reads(plan: Plan, prog: Program) -> None:
    """Rewrite `plan` in place until no tile group reads a piecewise temporary it can split."""
    for _ in range(16):
        if not _one_split(plan, prog):
            return


def _one_split(plan: Plan, prog: Program) -> bool:
    results = {r.buf for r in prog.outputs}
    reads = [_reads(g) for g in plan.groups]      # asked once: a traced loop has thousands of groups
    temps = sorted({b for g, got in zip(plan.groups, reads) if g.kind == "tile" for b in got
                    if b >= 0 and not prog.buffers[b].is_input and b not in results and b not in plan.virtual})
    uses = prog.uses()
    where = {n.index: g for g in plan.groups for n in g.nodes}
    for buf in temps:
        readers = [g for g, got in zip(plan.groups, reads) if buf in got]
        if any(g.kind != "tile" or g.tile is None or not g.stores for g in readers):
            continue
        writers = _writers(uses, where, prog, buf, min(g.index for g in readers))
        if writers is None:
            continue
        split = [_pieces(g, buf, prog.buffers[buf].numel, writers) for g in readers]
        if any(p is None for p in split):
            continue
        for g, pieces in zip(readers, split):
            at = next(i for i, other in enumerate(plan.groups) if other is g)
            plan.groups[at:at + 1] = pieces
        for w in writers:
            kept = [k for k, st in enumerate(w.group.stores) if st[1].buf != buf]
            if w.group.maps:
                w.group.maps = [w.group.maps[k] for k in kept]
            w.group.stores = [w.group.stores[k] for k in kept]
        for i, group in enumerate(plan.groups):
            group.index = i
        return True
    return False


def _reads(g: Group) -> set[int]:
    if g.kind == "tile":
        return {lf.buf for _, _, e in g.stores for lf in leaves_of(e) if lf.buf is not None}
    out = {r.buf for n in g.nodes for r in n.ins if r is not None}
    return out | {lf.buf for _, _, e in g.stores for lf in leaves_of(e) if lf.buf is not None}


def _writers(uses: BufferUses, where: dict[int, Group], prog: Program, buf: int,
             reader: int) -> list[Writer] | None:
    out = []
    for node in uses.writers(buf):
        g = where.get(node.index)
        if g is None or g.kind != "tile" or g.tile is None or g.index >= reader or len(node.outs) != 1:
            return None
        view = node.outs[0].layout
        expr = g.tile.exprs.get(node.index)
        if expr is None and g.maps:
            # a piece of an earlier split (a cat of slices of another cat): its store of the
            # node, over its box (rotate-half of a de-interleaved q in level2/13_interleave_rope)
            k = next((k for k, st in enumerate(g.stores) if st[0] is node and st[1].buf == buf), None)
            if k is None:
                return None
            view = Layout(tuple(g.tile.full), g.maps[k].strides, g.maps[k].offset)
            expr = g.stores[k][2]
        if expr is None or g.tile.full != tuple(view.shape) or has_reduce(expr):
            return None
        leaves = [lf for lf in leaves_of(expr) if lf.buf is not None]
        if prog.buffers[buf].dtype not in FLOATS and any(lf.dtype != prog.buffers[buf].dtype for lf in leaves):
            return None          # an integer temporary's rounding must happen: keep it
        if any(w.index > node.index for lf in leaves for w in uses.writers(lf.buf)):
            return None          # what the writer read is overwritten before the reader runs
        out.append(Writer(node, view, expr, g))
    # one writer of the whole temporary is not a piecewise value: recomputing it where it is
    # read would repeat its work per read (a per-box area read by a pairwise IoU, N times)
    return out if len(out) >= 2 else None


# -- covering boxes ------------------------------------------------------------------------------
# Everything is placed in the temporary's own coordinates: the shape its reader sees it
# whole in (dense), of which every writer's slice is a box.
@dataclass
class Space:
    strides: tuple[int, ...]        # dense strides of the temporary's shape
    shape: tuple[int, ...]
    boxes: list[tuple[int, ...]]    # each writer's first index (its box: first + view shape)


def _space(g: Group, buf: int, numel: int, writers: list[Writer]) -> Space | None:
    from sage.agent.compiler.ir import contiguous_strides

    refs = [r for n in g.nodes for r in n.ins if r is not None and r.buf == buf] + [w.node.outs[0] for w in writers]
    whole = next((r.shape for r in refs if r.layout.offset == 0 and r.layout.is_dense() and r.layout.numel == numel),
                 None)
    if whole is None:
        whole = _dense_shape(writers[0].view.strides, numel)
    if whole is None:
        return None
    strides = contiguous_strides(tuple(whole))
    firsts = []
    for w in writers:
        if len(w.view.shape) != len(whole) or any(n > 1 and s != t for n, s, t in zip(w.view.shape, w.view.strides, strides)):
            return None
        first = _index(w.view.offset, strides, tuple(whole))
        if first is None or any(f + n > m for f, n, m in zip(first, w.view.shape, whole)):
            return None
        firsts.append(first)
    return Space(strides, tuple(whole), firsts)


def _dense_shape(strides: tuple[int, ...], numel: int) -> tuple[int, ...] | None:
    """The shape whose dense strides these are, holding `numel` elements (the slices of a
    cat share their temporary's strides)."""
    from sage.agent.compiler.ir import contiguous_strides

    if not strides or strides[-1] != 1 or any(s <= 0 for s in strides):
        return None
    shape = [numel // strides[0]] + [strides[d - 1] // strides[d] for d in range(1, len(strides))]
    ok = contiguous_strides(tuple(shape)) == tuple(strides) and math.prod(shape) == numel
    return tuple(shape) if ok else None


def _index(offset: int, strides: tuple[int, ...], shape: tuple[int, ...]) -> tuple[int, ...] | None:
    out = []
    for s, n in zip(strides, shape):
        i, offset = divmod(offset, s) if n > 1 else (0, offset)
        out.append(i)
    return tuple(out) if offset == 0 and all(0 <= i < max(n, 1) for i, n in zip(out, shape)) else None


def _region(gm: GMap, box: Box, sp: Space) -> tuple[tuple[int, ...], list[tuple[int, int] | None]] | None:
    """The read over `box` in the temporary's coordinates: its first index and, per box
    axis, (temporary axis, step) or None."""
    first = _index(gm.offset + sum(lo * s for (lo, _), s in zip(box, gm.strides)), sp.strides, sp.shape)
    if first is None:
        return None
    used: set[int] = set()
    axes: list[tuple[int, int] | None] = []
    for (lo, hi), s in zip(box, gm.strides):
        if hi - lo == 1 or s == 0:
            axes.append(None)
            continue
        d = next((d for d in range(len(sp.shape)) if sp.shape[d] > 1 and s > 0 and s % sp.strides[d] == 0), None)
        if d is None or d in used or first[d] + s // sp.strides[d] * (hi - lo - 1) >= sp.shape[d]:
            return None
        used.add(d)
        axes.append((d, s // sp.strides[d]))
    return first, axes


def _assign(box: Box, reads: list[GMap], writers: list[Writer], sp: Space) -> list[Cover] | None:
    """For each read, the latest writer of what it reads over `box`, if that one writer
    covers all of it; None when the box must be cut."""
    got = [_latest(gm, box, writers, sp) for gm in reads]
    covers = [c for _, c in got]
    return None if any(c is None for c in covers) else covers      # type: ignore[return-value]


def _latest(gm: GMap, box: Box, writers: list[Writer], sp: Space) -> tuple[tuple[int, ...] | None, Cover | None]:
    """(the writers whose boxes the read meets, latest first, up to one that covers it all;
    that writer's cover or None)."""
    got = _region(gm, box, sp)
    if got is None:
        return None, None
    first, axes = got
    last = list(first)
    for (lo, hi), m in zip(box, axes):
        if m is not None:
            last[m[0]] += m[1] * (hi - lo - 1)
    met: list[int] = []
    cover = None
    for k in sorted(range(len(writers)), key=lambda k: -writers[k].node.index):
        lo_w, shape = sp.boxes[k], writers[k].view.shape
        if any(b < a or f >= a + n for f, b, a, n in zip(first, last, lo_w, shape)):
            continue                         # disjoint from this writer's box
        met.append(k)
        if all(f >= a and b < a + n for f, b, a, n in zip(first, last, lo_w, shape)):
            if len(met) == 1:                # the latest writer there wrote all of it
                cover = Cover(writers[k], axes, tuple(f - a for f, a in zip(first, lo_w)))
            break
    return tuple(met), cover


def _boxes(box: Box, reads: list[GMap], writers: list[Writer], sp: Space, free: list[int],
           depth: int = 0) -> list[Box] | None:
    if _assign(box, reads, writers, sp) is not None:
        return [box]
    if depth >= 3:
        return None
    best: list[Box] | None = None
    for a in free:
        lo, hi = box[a]
        if hi - lo < 2:
            continue
        runs: list[list] = []          # [start, end, label]
        for i in range(lo, hi):
            sub = box[:a] + ((i, i + 1),) + box[a + 1:]
            label = tuple(_latest(gm, sub, writers, sp)[0] for gm in reads)
            if runs and runs[-1][2] == label:
                runs[-1][1] = i + 1
            else:
                runs.append([i, i + 1, label])
        if len(runs) < 2:
            continue
        out: list[Box] = []
        for s, e, _ in runs:
            sub = box[:a] + ((s, e),) + box[a + 1:]
            got = _boxes(sub, reads, writers, sp, [f for f in free if f != a], depth + 1)
            if got is None:
                out = []
                break
            out += got
        if out and len(out) <= MAX_PIECES and (best is None or len(out) < len(best)):
            best = out
    return best


# -- the pieces ----------------------------------------------------------------------------------
def _pieces(g: Group, buf: int, numel: int, writers: list[Writer]) -> list[Group] | None:
    tile = g.tile
    assert tile is not None
    reads = sorted({lf.gmap for _, _, e in g.stores for lf in leaves_of(e) if lf.buf == buf},
                   key=lambda m: (m.offset, m.strides))
    free = [a for a in range(len(tile.full)) if a not in tile.rdims and tile.full[a] > 1]
    if math.prod(tile.full) == 0 or len(reads) > 16 or len(writers) > 8:
        return None
    sp = _space(g, buf, numel, writers)
    if sp is None:
        return None
    boxes = _boxes(tuple((0, n) for n in tile.full), reads, writers, sp, free)
    if boxes is None or len(boxes) > MAX_PIECES or \
            min(math.prod(hi - lo for lo, hi in b) for b in boxes) < MIN_SHARE * math.prod(tile.full):
        return None
    maps = g.maps or [tile.gmap(ref.layout, ref.shape) for _, ref, _ in g.stores]
    covers = [dict(zip(reads, _assign(box, reads, writers, sp) or [])) for box in boxes]
    whole = column_select(g, buf, boxes, [{gm: _through(c, gm) for gm, c in cv.items()} for cv in covers], maps)
    if whole is not None:
        return [whole]
    out = []
    for box in boxes:
        covers = dict(zip(reads, _assign(box, reads, writers, sp) or []))
        sub = TileGroup(tuple(hi - lo for lo, hi in box), tile.rdims, row_mode=tile.row_mode)
        piece = Group(g.index, "tile", list(g.nodes), sub)
        for (node, ref, expr), gm in zip(g.stores, maps):
            assert gm is not None
            piece.stores.append((node, ref, _rewrite(expr, box, buf, covers)))
            piece.maps.append(_shift(gm, box))
        out.append(piece)
    return out


def _shift(gm: GMap, box: Box) -> GMap:
    return GMap(gm.strides, gm.offset + sum(lo * s for (lo, _), s in zip(box, gm.strides)))


def _rewrite(expr, box: Box, buf: int, covers: dict[GMap, Cover]):
    if isinstance(expr, LeafRef):
        if expr.buf != buf:
            return LeafRef(expr.buf, _shift(expr.gmap, box), expr.dtype)
        return _through(covers[expr.gmap], expr.gmap)
    if isinstance(expr, Op):
        return Op(expr.name, tuple(_rewrite(a, box, buf, covers) for a in expr.args), expr.params)
    if isinstance(expr, Reduce):
        return Reduce(expr.kind, _rewrite(expr.arg, box, buf, covers))
    return expr


def _through(cover: Cover, gm: GMap):
    """The writer's expression at the points the box reads."""
    def leaf(lf: LeafRef) -> LeafRef:
        g = lf.gmap
        strides = tuple(0 if m is None else m[1] * g.strides[m[0]] for m in cover.axes)
        return LeafRef(lf.buf, GMap(strides, g.offset + sum(j * s for j, s in zip(cover.start, g.strides))), lf.dtype)

    def walk(e):
        if isinstance(e, LeafRef):
            return leaf(e)
        if isinstance(e, Op):
            return Op(e.name, tuple(walk(a) for a in e.args), e.params)
        return e

    return walk(cover.writer.expr)
